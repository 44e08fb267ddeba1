package load

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
)

// Request is one request type of a workload mix.
type Request struct {
	Name   string // label used in per-request stats; must be unique in a mix
	Method string // default GET
	URL    string // absolute http:// or https:// URL
	Header http.Header
	Body   []byte
	Weight float64 // relative weight (>0)
}

// ErrEmptyMix is returned by [Validate], [RunClosed] and [RunOpen] for a mix
// without requests.
var ErrEmptyMix = errors.New("load: empty request mix")

// MixError describes why one request of a mix is invalid. [Validate] returns
// it (possibly joined with others by errors.Join); use errors.As to inspect it.
type MixError struct {
	Index  int    // position of the request in the mix
	Name   string // its Name (may be empty)
	Field  string // "Name", "Method", "URL", "Header" or "Weight"
	Reason string // what is wrong, human readable
}

func (e *MixError) Error() string {
	return fmt.Sprintf("load: request %d (%q): %s: %s", e.Index, e.Name, e.Field, e.Reason)
}

// Validate checks a mix: it must be non-empty; every request must have a
// non-empty name unique within the mix, a weight that is finite and > 0, an
// absolute http or https URL with a host, a valid method token (empty means
// GET) and syntactically valid header fields. All problems are reported,
// joined with errors.Join; each is a *[MixError] (or [ErrEmptyMix]).
func Validate(mix []Request) error {
	if len(mix) == 0 {
		return ErrEmptyMix
	}
	var errs []error
	bad := func(i int, field, format string, args ...any) {
		errs = append(errs, &MixError{Index: i, Name: mix[i].Name, Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	seen := make(map[string]int, len(mix))
	for i, r := range mix {
		switch prev, dup := seen[r.Name]; {
		case r.Name == "":
			bad(i, "Name", "must not be empty")
		case dup:
			bad(i, "Name", "duplicate name, also used by request %d", prev)
		default:
			seen[r.Name] = i
		}
		if r.Method != "" && !isToken(r.Method) {
			bad(i, "Method", "invalid method %q", r.Method)
		}
		validateURL(i, r.URL, bad)
		for k, vs := range r.Header {
			if !isToken(k) {
				bad(i, "Header", "invalid field name %q", k)
				continue
			}
			for _, v := range vs {
				if strings.ContainsAny(v, "\r\n\x00") {
					bad(i, "Header", "invalid value for field %q: contains CR, LF or NUL", k)
				}
			}
		}
		if !(r.Weight > 0) || math.IsInf(r.Weight, 1) {
			bad(i, "Weight", "must be finite and > 0, got %v", r.Weight)
		}
	}
	return errors.Join(errs...)
}

func validateURL(i int, raw string, bad func(int, string, string, ...any)) {
	if raw == "" {
		bad(i, "URL", "must not be empty")
		return
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		bad(i, "URL", "cannot parse %q: %v", raw, err)
	case !u.IsAbs():
		bad(i, "URL", "%q is not absolute (want http:// or https://)", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		bad(i, "URL", "unsupported scheme %q in %q (want http or https)", u.Scheme, raw)
	case u.Host == "":
		bad(i, "URL", "no host in %q", raw)
	}
}

// isToken reports whether s is a non-empty RFC 9110 token (method or header
// field name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
