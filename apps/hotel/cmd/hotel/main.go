// Command hotel runs one service of the HotelReservation benchmark.
//
//	hotel -service profile [-port 7204] [-seed 1]
//
// See apps/README.md for the services, their flags and environment.
package main

import (
	"github.com/slowpoke-dev/slowpoke/apps/hotel"
	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

func main() { svc.Main(hotel.App) }
