package backend

import (
	"errors"
	"strings"
)

// Settings of a run that a backend may refuse, in words. A command that
// offers them maps each to how its user gives it (see Describe).
const (
	SettingPauseMethod = "pause method"
	SettingKubeMode    = "Kubernetes mode"
)

// SettingError says that a setting of a run (a pause method, a Kubernetes
// mode, an option of an experiment) cannot be honoured, why, and which
// settings would do instead. It names the settings in words, never the
// flags of a command: a command names them its own way with Describe.
//
// Its text is "SETTING VALUE: WHY; use OTHER VALUE or ...", e.g.
// "pause method signal: the node agent freezes the pods (cgroup); use
// Kubernetes mode template".
type SettingError struct {
	// Setting is what was set, in words ("pause method"); "" where no
	// one setting is at fault but another would help (Use).
	Setting string
	// Value is the value refused; "" for the setting as a whole.
	Value string
	// Err says why.
	Err error
	// Use lists the settings that would do instead, any one of them.
	Use []Setting
}

// Setting is a setting and its value (Value "": the setting as such).
type Setting struct {
	Name, Value string
}

func (e *SettingError) Error() string { return e.text(func(s string) string { return s }) }

func (e *SettingError) Unwrap() error { return e.Err }

// text is e's text with each setting named by name.
func (e *SettingError) text(name func(setting string) string) string {
	var b strings.Builder
	if e.Setting != "" {
		b.WriteString(name(e.Setting))
		if e.Value != "" {
			b.WriteString(" " + e.Value)
		}
		b.WriteString(": ")
	}
	b.WriteString(Describe(e.Err, name))
	if len(e.Use) > 0 {
		uses := make([]string, len(e.Use))
		for i, u := range e.Use {
			uses[i] = strings.TrimSpace(name(u.Name) + " " + u.Value)
		}
		b.WriteString("; use " + strings.Join(uses, " or "))
	}
	return b.String()
}

// Describe is err's text with the settings of the first SettingError in
// its chain, and of those it wraps, named by name: a command passes the
// names of its flags ("pause method" → "--pause"), so that what its user
// reads says what to type.
func Describe(err error, name func(setting string) string) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	var se *SettingError
	if !errors.As(err, &se) {
		return text
	}
	return strings.Replace(text, se.Error(), se.text(name), 1)
}
