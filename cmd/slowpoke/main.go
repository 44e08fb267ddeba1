// Command slowpoke answers what-if performance questions about microservice
// applications by virtual speedup. Run "slowpoke help" for the subcommands.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/slowpoke-dev/slowpoke/internal/emulator"
)

type command struct {
	name    string
	summary string
	run     func(args []string) int
}

var commands []command

// program is the name this binary answers to in its messages: slowpoke,
// or slowpoke-lab for the lab's build (lab.go).
var program = "slowpoke"

const labProgram = "slowpoke-lab"

func init() {
	commands = []command{
		{"demo", "run the bundled example end to end and print a predicted-throughput curve", runDemo},
		{"predict", "predict throughput if a target service were faster (virtual speedup)", runPredict},
		{"validate", "predict and also measure the truth (target really reduced): per-point error and RMSE", runValidate},
		{"rank", "which service is worth optimizing: predict the gain of speeding up each service, ranked", runRank},
		{"latency", "latency what-if per request type: p50/p90/p99 if a target service were faster, validated", runLatency},
		{"pools", "what pool size each critical service should run with: goodput against concurrency, knee, validation", runPools},
		{"restore", "put back the Deployments a killed run left under slowpoke (Kubernetes)", runRestore},
		{"image", "build the image Kubernetes runs need from this binary, and write or push it", runImage},
		{"bench", "benchmarks of slowpoke itself that print figures: " + benchNames(", "), runBench},
		{"controller", "run one service under a slowpoke controller (used by the backends)", runController},
		{"guard", "end a run's services if its orchestrator or a controller dies (used by the backends)", runGuard},
		{"agent", "the Kubernetes node agent: pause a run's pods from their node (run by the backend's DaemonSet)", runAgent},
		{"install", "copy this binary next to a service in its pod (used by the Kubernetes backend)", runInstall},
		{"version", "print the version of slowpoke and of the Go toolchain that built it", runVersion},
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, "%s: what-if throughput for microservices by virtual speedup\n\nUsage:\n  %s <command> [flags]\n\nCommands:\n", program, program)
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(os.Stderr, "\nRun \"%s <command> -h\" for a command's flags. Docs: docs/ in the repository.\n", program)
}

func main() {
	// Invoked as slowpoke-emu (the demo links it), this binary is the
	// service emulator.
	if filepath.Base(os.Args[0]) == emuName {
		os.Exit(emulator.Main(os.Args[1:], os.Stderr))
	}
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	name := os.Args[1]
	if name == "--version" || name == "-version" {
		name = "version"
	}
	if name == "help" || name == "-h" || name == "--help" {
		// "slowpoke help predict" is "slowpoke predict -h".
		if len(os.Args) == 3 && name == "help" {
			for _, c := range commands {
				if c.name == os.Args[2] {
					os.Exit(c.run([]string{"-h"}))
				}
			}
			fmt.Fprintf(os.Stderr, "%s: unknown command %q\n\n", program, os.Args[2])
			usage()
			os.Exit(2)
		}
		usage()
		return
	}
	for _, c := range commands {
		if c.name == name {
			os.Exit(c.run(os.Args[2:]))
		}
	}
	fmt.Fprintf(os.Stderr, "%s: unknown command %q\n\n", program, name)
	usage()
	os.Exit(2)
}

// runVersion prints the module version (or the commit a source build was
// made from) and the Go version.
func runVersion(args []string) int {
	if len(args) > 0 {
		fmt.Fprintln(os.Stderr, "Usage: slowpoke version")
		if args[0] == "-h" || args[0] == "--help" {
			return 0
		}
		return 2
	}
	fmt.Println(versionString())
	return 0
}

func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "slowpoke (unknown version)"
	}
	v := info.Main.Version
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if (v == "" || v == "(devel)") && rev != "" {
		v = fmt.Sprintf("devel (commit %.12s%s)", rev, modified)
	}
	return fmt.Sprintf("slowpoke %s, %s", v, info.GoVersion)
}
