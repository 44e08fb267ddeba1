//go:build lab

package experiment

// CheckPauseLead refuses a PauseLead the controllers would refuse.
func (t Tuning) CheckPauseLead() error { return CheckPauseLead(t.pauseLead()) }
