package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration that reads from YAML either as a Go duration
// string ("1s", "250ms") or as a plain number of seconds (5, 0.5).
type Duration struct{ time.Duration }

// ParseDuration parses a Go duration string or a plain number of seconds.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		secs := f * float64(time.Second)
		// Reject what would overflow or silently become garbage.
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(secs) > math.MaxInt64 {
			return Duration{}, fmt.Errorf("invalid duration %q: out of range", s)
		}
		return Duration{time.Duration(secs)}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return Duration{}, fmt.Errorf(`invalid duration %q: want a duration such as "1s" or "250ms", or a number of seconds`, s)
	}
	return Duration{d}, nil
}

// UnmarshalYAML implements yaml.Unmarshaler. Errors are returned as
// *yaml.TypeError so that the decoder keeps going and reports them together
// with every other problem, each with its line number.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{
			fmt.Sprintf(`line %d: invalid duration: want a duration such as "1s" or "250ms", or a number of seconds`, n.Line),
		}}
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*d = v
	return nil
}

// MarshalYAML writes the duration as a string, so a marshalled spec reads back
// unchanged.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalText makes the duration print as "1s" in JSON and elsewhere.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText accepts the same forms as the YAML decoder.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
