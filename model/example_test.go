package model_test

import (
	"fmt"

	"github.com/slowpoke-dev/slowpoke/model"
)

// A slowdown run measured 800 req/s with every other service paused
// 200 µs per call of the target, which is called twice per request and
// has one core: the application with the target 200 µs cheaper per call
// would serve 1 / (1/800 - 2 × 200 µs) = 1176 req/s.
func ExamplePredict() {
	rps, err := model.Predict(800, 200e-6, 2, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.0f req/s\n", rps)
	// Output: 1176 req/s
}

// Reductions are written as on the command line (a bare number takes the
// unit of the list's last element); each resolves to the time taken off a
// call once the target's cost per call (here 1 ms) is measured.
func ExampleParseReductions() {
	reds, err := model.ParseReductions("0%,25%,...,75%,300us,2x,1->4")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range reds {
		d, err := r.Resolve(1e-3)
		if err != nil {
			fmt.Println(r.Text, err)
			continue
		}
		fmt.Printf("%s: %.0f µs\n", r.Text, d*1e6)
	}
	// Output:
	// 0%: 0 µs
	// 25%: 250 µs
	// 50%: 500 µs
	// 75%: 750 µs
	// 300us: 300 µs
	// 2x: 500 µs
	// 1->4: 750 µs
}
