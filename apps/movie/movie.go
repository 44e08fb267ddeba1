// Package movie is the MovieReview benchmark (DeathStarBench's media
// service): users read movie pages and write reviews. Every service serves
// HTTP/JSON.
//
//	page:    frontend ──> page ─┬─> movie-info
//	                            ├─> cast-info
//	                            ├─> plot
//	                            └─> movie-reviews ──> review-storage
//	compose: frontend ─┬─> user            (login)
//	                   ├─> unique-id       (review id)
//	                   ├─> user            (user id)
//	                   ├─> movie-id        (title -> movie id)
//	                   └─> compose-review ─┬─> review-storage  (store)
//	                                       ├─> movie-reviews   (upload)
//	                                       └─> user-reviews    (upload)
package movie

import (
	"fmt"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

// App is the MovieReview application.
var App = &svc.App{
	Name: "movie",
	Services: []svc.ServiceInfo{
		{Name: "frontend", Port: 7400, Protocol: svc.HTTP},
		{Name: "page", Port: 7401, Protocol: svc.HTTP},
		{Name: "movie-info", Port: 7402, Protocol: svc.HTTP},
		{Name: "cast-info", Port: 7403, Protocol: svc.HTTP},
		{Name: "plot", Port: 7404, Protocol: svc.HTTP},
		{Name: "movie-reviews", Port: 7405, Protocol: svc.HTTP},
		{Name: "review-storage", Port: 7406, Protocol: svc.HTTP},
		{Name: "compose-review", Port: 7407, Protocol: svc.HTTP},
		{Name: "unique-id", Port: 7408, Protocol: svc.HTTP},
		{Name: "user", Port: 7409, Protocol: svc.HTTP},
		{Name: "movie-id", Port: 7410, Protocol: svc.HTTP},
		{Name: "user-reviews", Port: 7411, Protocol: svc.HTTP},
	},
	New: newService,
}

func newService(name string, cfg svc.Config) (svc.Server, error) {
	m := svc.NewMux(cfg.PerCall())
	var clients []*svc.Client
	client := func(service string) *svc.Client {
		c := svc.NewClient(cfg.Addr(service))
		clients = append(clients, c)
		return c
	}
	switch name {
	case "frontend":
		newFrontend(cfg.Seed, client).register(m)
	case "page":
		newPage(client).register(m)
	case "movie-info":
		newMovieInfo(cfg.Seed).register(m)
	case "cast-info":
		newCastInfo(cfg.Seed).register(m)
	case "plot":
		newPlot(cfg.Seed).register(m)
	case "movie-reviews":
		newMovieReviews(cfg.Seed, client).register(m)
	case "review-storage":
		newReviewStorage(cfg.Seed).register(m)
	case "compose-review":
		newComposeReview(client).register(m)
	case "unique-id":
		newUniqueID().register(m)
	case "user":
		newUserService(cfg.Seed).register(m)
	case "movie-id":
		newMovieID(cfg.Seed).register(m)
	case "user-reviews":
		newUserReviews(cfg.Seed, client).register(m)
	default:
		return nil, fmt.Errorf("unknown service %q", name)
	}
	return svc.NewHTTPServer(m, func() {
		for _, c := range clients {
			c.Close()
		}
	}), nil
}
