package slowhttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/slowpoke-dev/slowpoke/instrument/slowhttp"
)

// Wrap the server's mux and the client's transport; nothing else changes.
// Outside a slowpoke controller both wrappers return their argument.
func Example() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /cart", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "3 items")
	})
	srv := httptest.NewServer(slowhttp.NewHandler(mux))
	defer srv.Close()

	client := &http.Client{Transport: slowhttp.NewTransport(http.DefaultTransport)}
	resp, err := client.Get(srv.URL + "/cart")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)
	// Output: 200 OK
}

// Name endpoints yourself when the handler is not a ServeMux, e.g. to keep
// IDs in paths from multiplying the endpoints.
func ExampleWithEndpointName() {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	wrapped := slowhttp.NewHandler(h, slowhttp.WithEndpointName(func(r *http.Request) string {
		return r.Method + " /api"
	}))
	_ = wrapped
	fmt.Println("ok")
	// Output: ok
}
