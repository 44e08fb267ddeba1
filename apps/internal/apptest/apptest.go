// Package apptest holds the helpers the application tests share: starting an
// application in process, calling its front end, and checking its spec file.
package apptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

// Start runs every service of app in this process on ephemeral ports of
// 127.0.0.1 and shuts them down when the test ends.
func Start(t testing.TB, app *svc.App, seed uint64) *svc.Cluster {
	t.Helper()
	c, err := svc.StartCluster(app, svc.ClusterConfig{Seed: seed})
	if err != nil {
		t.Fatalf("starting %s: %v", app.Name, err)
	}
	t.Cleanup(func() {
		// A connection the client dialled but never used is "new" to the
		// server, and Shutdown waits 5 s for such connections: close the
		// test client's idle connections first.
		client.CloseIdleConnections()
		if err := c.Close(); err != nil {
			t.Errorf("stopping %s: %v", app.Name, err)
		}
	})
	return c
}

var client = &http.Client{Timeout: 30 * time.Second}

// Do sends a request with an optional body and returns the status and the
// body of the reply.
func Do(t testing.TB, method, url string, headers map[string]string, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewBufferString(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading reply: %v", method, url, err)
	}
	return resp.StatusCode, data
}

// Try sends a request with an optional JSON body and returns an error unless
// the reply is 200. Unlike the other helpers it may run on any goroutine.
func Try(method, url, body string) error {
	code, data, err := Send(method, url, body)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("%s %s: status %d: %s", method, url, code, data)
	}
	return err
}

// Send sends a request with an optional JSON body and returns the status and
// body of the reply. Unlike the other helpers it may run on any goroutine.
func Send(method, url, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// GetJSON GETs url, expects 200 and decodes the reply into out.
func GetJSON(t testing.TB, url string, out any) {
	t.Helper()
	code, data := Do(t, http.MethodGet, url, nil, "")
	decode(t, "GET "+url, code, data, out)
}

// PostJSON POSTs in (marshalled unless it is a string) to url, expects 200
// and decodes the reply into out (unless nil).
func PostJSON(t testing.TB, url string, in, out any) {
	t.Helper()
	code, data := Post(t, url, in)
	decode(t, "POST "+url, code, data, out)
}

// Post POSTs in (marshalled unless it is a string) and returns the status
// and body of the reply.
func Post(t testing.TB, url string, in any) (int, []byte) {
	t.Helper()
	body, ok := in.(string)
	if !ok {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = string(b)
	}
	return Do(t, http.MethodPost, url, nil, body)
}

func decode(t testing.TB, what string, code int, data []byte, out any) {
	t.Helper()
	if code != http.StatusOK {
		t.Fatalf("%s: status %d: %s", what, code, data)
	}
	if out == nil {
		return
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("%s: decoding %s: %v", what, data, err)
	}
}
