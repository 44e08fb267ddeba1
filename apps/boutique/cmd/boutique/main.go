// Command boutique runs one service of the OnlineBoutique benchmark.
//
//	boutique -service cart [-port 7101] [-seed 1]
//
// See apps/README.md for the services, their flags and environment.
package main

import (
	"github.com/slowpoke-dev/slowpoke/apps/boutique"
	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

func main() { svc.Main(boutique.App) }
