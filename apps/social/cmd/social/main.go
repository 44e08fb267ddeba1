// Command social runs one service of the SocialNetwork benchmark.
//
//	social -service home-timeline [-port 7302] [-seed 1]
//
// See apps/README.md for the services, their flags and environment.
package main

import (
	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
	"github.com/slowpoke-dev/slowpoke/apps/social"
)

func main() { svc.Main(social.App) }
