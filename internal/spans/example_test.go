package spans_test

import (
	"fmt"
	"os/exec"

	"github.com/slowpoke-dev/slowpoke/internal/spans"
)

// A service started with the receiver's environment exports its spans to
// it; Count then tells its calls in a window of time.
func Example() {
	r, err := spans.Listen()
	if err != nil {
		panic(err)
	}
	defer r.Close()
	cmd := exec.Command("node", "--require", "@opentelemetry/auto-instrumentations-node/register", "catalog.js")
	for k, v := range r.Env("catalog") {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	env := r.Env("catalog")
	fmt.Println(env["OTEL_SERVICE_NAME"], env["OTEL_TRACES_SAMPLER"], env["OTEL_BSP_MAX_QUEUE_SIZE"])
	// Output: catalog always_on 65536
}
