// Package social is the SocialNetwork benchmark: users publish posts that
// land in their own timeline and in their followers' home timelines. Every
// service serves HTTP/JSON.
//
//	frontend ─┬─> home-timeline ─┬─> post-storage          (read)
//	          │                  └─> social-graph          (write: followers)
//	          ├─> user-timeline ───> post-storage          (read)
//	          ├─> compose-post ─┬──> post-storage          (store)
//	          │                 ├──> user-timeline         (write)
//	          │                 └──> home-timeline         (write)
//	          └─> social-graph                             (follow, followers)
package social

import (
	"fmt"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

// App is the SocialNetwork application.
var App = &svc.App{
	Name: "social",
	Services: []svc.ServiceInfo{
		{Name: "frontend", Port: 7300, Protocol: svc.HTTP},
		{Name: "compose-post", Port: 7301, Protocol: svc.HTTP},
		{Name: "home-timeline", Port: 7302, Protocol: svc.HTTP},
		{Name: "user-timeline", Port: 7303, Protocol: svc.HTTP},
		{Name: "post-storage", Port: 7304, Protocol: svc.HTTP},
		{Name: "social-graph", Port: 7305, Protocol: svc.HTTP},
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
		newFrontend(cfg, client).register(m)
	case "compose-post":
		newComposePost(client).register(m)
	case "home-timeline":
		newHomeTimeline(cfg.Seed, client).register(m)
	case "user-timeline":
		newUserTimeline(cfg.Seed, client).register(m)
	case "post-storage":
		newPostStorage(cfg.Seed).register(m)
	case "social-graph":
		newSocialGraph(cfg.Seed).register(m)
	default:
		return nil, fmt.Errorf("unknown service %q", name)
	}
	return svc.NewHTTPServer(m, func() {
		for _, c := range clients {
			c.Close()
		}
	}), nil
}
