// Package hotel is the HotelReservation benchmark: users search hotels near
// a point for given dates and book rooms. Every service serves HTTP/JSON.
//
//	search:  frontend ─┬─> search ─┬─> geo          (nearest hotels)
//	                   │           └─> rate         (prices for the dates)
//	                   ├─> reservation              (availability)
//	                   └─> profile                  (hotel details)
//	reserve: frontend ─┬─> user                     (login)
//	                   └─> reservation              (book, within capacity)
package hotel

import (
	"fmt"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

// App is the HotelReservation application.
var App = &svc.App{
	Name: "hotel",
	Services: []svc.ServiceInfo{
		{Name: "frontend", Port: 7200, Protocol: svc.HTTP},
		{Name: "search", Port: 7201, Protocol: svc.HTTP},
		{Name: "geo", Port: 7202, Protocol: svc.HTTP},
		{Name: "rate", Port: 7203, Protocol: svc.HTTP},
		{Name: "profile", Port: 7204, Protocol: svc.HTTP},
		{Name: "reservation", Port: 7205, Protocol: svc.HTTP},
		{Name: "user", Port: 7206, Protocol: svc.HTTP},
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
	case "search":
		newSearch(client).register(m)
	case "geo":
		newGeo(cfg.Seed).register(m)
	case "rate":
		newRate(cfg.Seed).register(m)
	case "profile":
		newProfile(cfg.Seed).register(m)
	case "reservation":
		newReservation(cfg.Seed).register(m)
	case "user":
		newUserService(cfg.Seed).register(m)
	default:
		return nil, fmt.Errorf("unknown service %q", name)
	}
	return svc.NewHTTPServer(m, func() {
		for _, c := range clients {
			c.Close()
		}
	}), nil
}
