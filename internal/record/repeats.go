package record

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/slowpoke-dev/slowpoke/internal/report"
)

// A Repeat is the records of one command run more than once on one
// build: the same command line but for where it wrote (--out, --record)
// and what it noted (--note), at the same commit (a dirty work tree
// counted as its commit). Pooled, their points tell a prediction's bias
// from the run-to-run noise that one run's RMSE mixes with it.
type Repeat struct {
	Command string // the command without --out, --record and --note
	Commit  string
	Records []*Record // oldest first
}

// Repeats groups recs (oldest first) into Repeats: the records with
// points whose command and commit another record with points shares.
func Repeats(recs []Record) []Repeat {
	var out []Repeat
	index := map[string]int{}
	for i := range recs {
		r := &recs[i]
		if len(r.Rows) == 0 || r.Command == "" {
			continue
		}
		cmd := commandKey(r.Command)
		commit := strings.TrimSuffix(r.Commit, "-dirty")
		k := commit + "\x00" + cmd
		j, ok := index[k]
		if !ok {
			j = len(out)
			index[k] = j
			out = append(out, Repeat{Command: cmd, Commit: commit})
		}
		out[j].Records = append(out[j].Records, r)
	}
	return slices.DeleteFunc(out, func(g Repeat) bool { return len(g.Records) < 2 })
}

// RepeatVariant is one variant's figures over a Repeat's runs.
type RepeatVariant struct {
	Variant string
	Runs    int
	// RMSEs and Means are each run's RMSE and mean error (%), in the
	// order of the runs.
	RMSEs, Means []float64
	// PooledRMSEPct is the RMSE over the points of their mean prediction
	// against their truth's mean over every run (its runs weighted by
	// their count); nil where the runs do not have the same points.
	PooledRMSEPct *float64
	PooledErrors  []float64 // each point's, in order of reduction
	// TruthRelSD is one truth run's relative standard deviation, pooled
	// over every point of every run (0: no point had two runs), and
	// TruthRuns the mean number of runs per point and run.
	TruthRelSD float64
	TruthRuns  float64
}

// FloorPct is the RMSE that a prediction with neither bias nor noise of
// its own would still show against truths that are means of TruthRuns
// noisy runs, one run (runs = 1) or pooled over the Repeat's runs
// (runs = Runs): the truth's own noise, σ/√n.
func (v RepeatVariant) FloorPct(runs int) float64 {
	if v.TruthRuns <= 0 || runs <= 0 {
		return 0
	}
	return 100 * v.TruthRelSD / math.Sqrt(v.TruthRuns*float64(runs))
}

// Variants is every variant's figures over g's runs, in the order of the
// first run's summary.
func (g Repeat) Variants() []RepeatVariant {
	var out []RepeatVariant
	for _, s := range g.Records[0].Summary {
		v := RepeatVariant{Variant: s.Variant}
		var all []Row // every run's rows of the variant, for truthNoise
		var truthRuns, truthPoints int
		var pts [][]Row // by run, the variant's rows in order of reduction within each configuration
		for _, r := range g.Records {
			i := slices.IndexFunc(r.Summary, func(x Summary) bool { return x.Variant == s.Variant })
			if i < 0 {
				continue
			}
			v.Runs++
			v.RMSEs = append(v.RMSEs, r.Summary[i].RMSEPct)
			v.Means = append(v.Means, r.Summary[i].MeanPct)
			var rows []Row
			for _, row := range r.Rows {
				if row.Variant != s.Variant || row.TrueRPS <= 0 {
					continue
				}
				rows = append(rows, row)
				truthRuns += max(1, row.TrueRunCount)
				truthPoints++
			}
			slices.SortStableFunc(rows, func(a, b Row) int {
				if c := strings.Compare(a.Config+a.Target, b.Config+b.Target); c != 0 {
					return c
				}
				return cmp.Compare(a.ReductionUS, b.ReductionUS)
			})
			pts = append(pts, rows)
			all = append(all, rows...)
		}
		v.TruthRelSD, _ = truthNoise(all)
		if truthPoints > 0 {
			v.TruthRuns = float64(truthRuns) / float64(truthPoints)
		}
		v.PooledErrors, v.PooledRMSEPct = pooledErrors(pts)
		out = append(out, v)
	}
	return out
}

// pooledErrors is each point's error (%) of its mean prediction against
// its truth's mean over runs (each run's rows in the same order), and
// their RMSE; none where the runs differ in their points or a prediction
// is missing.
func pooledErrors(runs [][]Row) ([]float64, *float64) {
	if len(runs) < 2 || len(runs[0]) == 0 {
		return nil, nil
	}
	n := len(runs[0])
	for _, rows := range runs {
		if len(rows) != n {
			return nil, nil
		}
		for i, row := range rows {
			if row.Config != runs[0][i].Config || row.Target != runs[0][i].Target || !(row.PredictedRPS > 0) {
				return nil, nil
			}
		}
	}
	errs := make([]float64, n)
	var sq float64
	for i := range n {
		var pred, truth, weight float64
		for _, rows := range runs {
			pred += rows[i].PredictedRPS
			w := float64(max(1, rows[i].TrueRunCount))
			truth += w * rows[i].TrueRPS
			weight += w
		}
		pred /= float64(len(runs))
		truth /= weight
		errs[i] = 100 * (pred/truth - 1)
		sq += errs[i] * errs[i]
	}
	rmse := math.Sqrt(sq / float64(n))
	return errs, &rmse
}

// commandKey is cmd (as Stamp quotes it) without the flags that say only
// where a run wrote and what it noted: --out, --record, --note, each with
// its value (separate or after "=").
func commandKey(cmd string) string {
	words := splitWords(cmd)
	var kept []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		name, _, withValue := strings.Cut(w, "=")
		switch strings.TrimLeft(name, "-") {
		case "out", "record", "note":
			if strings.HasPrefix(name, "-") {
				if !withValue {
					i++ // its value
				}
				continue
			}
		}
		kept = append(kept, w)
	}
	return strings.Join(quoteArgs(kept), " ")
}

// splitWords splits a command line as a POSIX shell would its words:
// single quotes keep everything up to the next, double quotes everything
// but a backslash-escaped quote or backslash, and a backslash outside
// quotes the next character. Nothing is expanded.
func splitWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			inWord = true
			i++
			cur.WriteByte(s[i])
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// renderRepeats writes each Repeat: its command, build and dates, and a
// table of its variants.
func renderRepeats(b *strings.Builder, groups []Repeat) {
	if len(groups) == 0 {
		return
	}
	b.WriteString("\n### The same command run again, pooled\n\n")
	b.WriteString("Runs of one command on one build (the same command line but for `--out`, `--record` and `--note`; a dirty work tree counted as its commit), pooled. " +
		"One run's RMSE mixes the prediction's bias with two noises: the slowdown runs' and the truth's own. " +
		"Pooled over the runs, each point's mean prediction against its truth's mean (its runs weighted by their count) keeps the bias and shrinks both noises; the mean error per run is the bias alone, give or take the noise. " +
		"The truth's own noise is one truth run's relative standard deviation, pooled over every point of every run; a prediction with neither bias nor noise of its own would still show an RMSE of about that over the square root of the truth's runs: per run, and pooled over the runs (the two floor columns). Each run follows in full below, newest first.\n")
	for _, g := range groups {
		var dates []string
		for _, r := range g.Records {
			dates = append(dates, r.Date.UTC().Format("2006-01-02 15:04"))
		}
		fmt.Fprintf(b, "\n%d runs of %s, commit %s (%s UTC):\n\n    %s\n\n", len(g.Records), strings.Join(configsOf(g.Records[0]), ", "), g.Commit, strings.Join(dates, ", "), g.Command)
		b.WriteString("| variant | RMSE per run: median (range) | mean error per run: mean (range) | pooled: each point's error | pooled RMSE | truth's noise: one run | floor per run | floor pooled |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|\n")
		for _, v := range g.Variants() {
			pooled, each := "–", "–"
			if v.PooledRMSEPct != nil {
				pooled = fmt.Sprintf("%.2f%%", *v.PooledRMSEPct)
				var es []string
				for _, e := range v.PooledErrors {
					es = append(es, fmt.Sprintf("%+.1f%%", e))
				}
				each = strings.Join(es, ", ")
			}
			noise, floor1, floorN := "–", "–", "–"
			if v.TruthRelSD > 0 {
				noise = fmt.Sprintf("%.1f%%", 100*v.TruthRelSD)
				floor1 = fmt.Sprintf("%.1f%%", v.FloorPct(1))
				floorN = fmt.Sprintf("%.1f%%", v.FloorPct(v.Runs))
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", v.Variant,
				spread(v.RMSEs), meanSpread(v.Means), each, pooled, noise, floor1, floorN)
		}
	}
}

// spread is the median of xs (%) and their range.
func spread(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f%% (%.2f%% to %.2f%%)", report.Median(xs), slices.Min(xs), slices.Max(xs))
}

// meanSpread is the mean of xs (%) and their range.
func meanSpread(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return fmt.Sprintf("%+.2f%% (%+.2f%% to %+.2f%%)", sum/float64(len(xs)), slices.Min(xs), slices.Max(xs))
}
