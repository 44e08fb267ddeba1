// Command movie runs one service of the MovieReview benchmark.
//
//	movie -service movie-reviews [-port 7405] [-seed 1]
//
// See apps/README.md for the services, their flags and environment.
package main

import (
	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
	"github.com/slowpoke-dev/slowpoke/apps/movie"
)

func main() { svc.Main(movie.App) }
