package experiment

// Settings of an experiment that its option errors (backend.SettingError)
// name, in words, after the fields of Options, PoolOptions and
// LatencyOptions: a command maps them to its flags.
const (
	SettingReduction   = "reduction"   // an element of Reductions
	SettingBatch       = "batch"       // Batch
	SettingMaxPause    = "max pause"   // MaxPause
	SettingTrigger     = "trigger"     // Trigger
	SettingConnections = "connections" // Connections
	SettingStep        = "step"        // PoolOptions.Step
	SettingLevels      = "levels"      // PoolOptions.Levels
)
