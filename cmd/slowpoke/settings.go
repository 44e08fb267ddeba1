package main

import (
	"github.com/slowpoke-dev/slowpoke/internal/backend"
	"github.com/slowpoke-dev/slowpoke/internal/experiment"
)

// settingFlags names the settings the libraries refuse in words
// (backend.SettingError) by the flags that give them.
var settingFlags = map[string]string{
	backend.SettingPauseMethod:    "--pause",
	backend.SettingKubeMode:       "--kube-mode",
	experiment.SettingReduction:   "--reduce",
	experiment.SettingBatch:       "--batch",
	experiment.SettingMaxPause:    "--max-pause",
	experiment.SettingTrigger:     "--trigger",
	experiment.SettingConnections: "--connections",
	experiment.SettingStep:        "--step",
	experiment.SettingLevels:      "--levels",
}

// flagOf is the flag that gives setting, or its words where none does.
func flagOf(setting string) string {
	if f, ok := settingFlags[setting]; ok {
		return f
	}
	return setting
}

// errText is err as a command prints it: a setting the libraries refused
// is named by its flag ("--pause cgroup: ...; use --kube-mode template").
func errText(err error) string { return backend.Describe(err, flagOf) }
