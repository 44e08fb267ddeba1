// Package yamlerr rewords yaml.v3 decoding errors in the vocabulary of a
// file format instead of the Go types behind it, one error per problem, each
// with its line. The spec and the emulator's topology share it.
package yamlerr

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Type names one decoded Go type in the words of the format.
type Type struct {
	Where string       // e.g. "a service"
	Go    reflect.Type // its fields are listed for an unknown field
}

// Vocabulary describes a format: the Go package its types live in, its
// types by Go name, and further replacements (old, new pairs) for composite
// type names such as "[]spec.rawService".
type Vocabulary struct {
	Package string
	Types   map[string]Type
	Replace []string

	unknown *regexp.Regexp
}

// Error turns a yaml.v3 error into the format's vocabulary.
func (v *Vocabulary) Error(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	errs := make([]error, 0, len(te.Errors))
	for _, msg := range te.Errors {
		errs = append(errs, errors.New(v.rewrite(msg)))
	}
	return errors.Join(errs...)
}

func (v *Vocabulary) rewrite(msg string) string {
	if v.unknown == nil {
		v.unknown = regexp.MustCompile(`^line (\d+): field (.+) not found in type ` + regexp.QuoteMeta(v.Package) + `\.(\w+)$`)
	}
	if m := v.unknown.FindStringSubmatch(msg); m != nil {
		if t, ok := v.Types[m[3]]; ok {
			return fmt.Sprintf("line %s: unknown field %q in %s; known fields: %s",
				m[1], m[2], t.Where, strings.Join(Fields(t.Go), ", "))
		}
	}
	msg = strings.NewReplacer(v.Replace...).Replace(msg)
	for name, t := range v.Types {
		msg = strings.ReplaceAll(msg, v.Package+"."+name, t.Where)
	}
	return msg
}

// Fields lists the YAML field names of a struct type.
func Fields(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}
