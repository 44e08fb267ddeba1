package experiment

import (
	"slices"
	"testing"

	"github.com/slowpoke-dev/slowpoke/internal/spec"
	"github.com/slowpoke-dev/slowpoke/internal/wire"
)

// Calls are mapped to services by host name first (as on Kubernetes,
// where ports may repeat or be left out), then by a port one service
// alone has.
func TestEachCall(t *testing.T) {
	s := &spec.Spec{Services: []spec.Service{
		{Name: "frontend", Port: 8080},
		{Name: "cart", Port: 8081, Deployment: "cart-v2"},
		{Name: "catalog", Port: 8082},
		{Name: "currency", Port: 8082}, // the same port as catalog
		{Name: "ads"},                  // no port
	}}
	for _, tc := range []struct {
		addr, want string // want "" for no service
	}{
		{"127.0.0.1:8081", "cart"},
		{"[::1]:8081", "cart"},
		{"cart:8081", "cart"},
		{"cart-v2.shop.svc.cluster.local:9000", "cart"}, // by its Deployment's name, whatever the port
		{"ads:80", "ads"},
		{"ads.shop:80", "ads"},
		{"currency:8082", "currency"},
		{"10.0.0.7:8082", ""}, // a port two services share
		{"localhost:8080", "frontend"},
		{"example.com:443", ""},
		{"no-port", ""},
	} {
		var got []string
		stats := map[string]*wire.Stats{"frontend": {Downstream: map[string]uint64{tc.addr: 1}}}
		eachCall(s, stats, func(caller, callee string) {
			if caller != "frontend" {
				t.Errorf("%s: caller %q", tc.addr, caller)
			}
			got = append(got, callee)
		})
		want := []string{tc.want}
		if tc.want == "" {
			want = nil
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: callees %v, want %v", tc.addr, got, want)
		}
	}
}
