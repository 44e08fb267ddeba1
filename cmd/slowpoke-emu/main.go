// Command slowpoke-emu runs one service of a synthetic microservice
// application described by a topology file.
//
//	slowpoke-emu -topology topology.yaml -service NAME [-plain] [-otel]
//
// Environment:
//
//	EMU_WORK_OFFSET_US  µs added to every endpoint's work_us (may be negative; floored at 0)
//	EMU_PORT            port to listen on instead of the topology's
//	OTEL_*              with -otel: where and how spans are exported
//
// See docs/emulator.md.
package main

import (
	"os"

	"github.com/slowpoke-dev/slowpoke/internal/emulator"
	"github.com/slowpoke-dev/slowpoke/internal/emulator/emuotel"
)

func main() {
	os.Exit(emulator.Main(os.Args[1:], os.Stderr, emulator.WithOTel(emuotel.Setup)))
}
