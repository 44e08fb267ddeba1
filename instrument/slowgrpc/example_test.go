package slowgrpc_test

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/slowpoke-dev/slowpoke/instrument/slowgrpc"
)

// Add the handlers as options; service code is unchanged. Outside a
// slowpoke controller they do nothing.
func Example() {
	srv := grpc.NewServer(grpc.StatsHandler(slowgrpc.NewServerHandler()))
	defer srv.Stop()

	conn, err := grpc.NewClient("127.0.0.1:7070",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(slowgrpc.NewClientHandler()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	fmt.Println("instrumented")
	// Output: instrumented
}
