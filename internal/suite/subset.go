package suite

import (
	"slices"
)

// subsetMin is the size Subset fills up to with bottleneck targets.
const subsetMin = 12

// Subset returns a representative subset of all (normally Suite's
// result), in the order of all, each tagged "subset": every topology at
// least once, both protocols, both call modes, all three placements, both
// bottleneck and non-bottleneck targets, and every protocol x mode x
// bottleneck, placement x bottleneck, placement x protocol and placement x
// mode combination that all has; then bottleneck targets of further
// topologies up to 12 configurations. For the suite that is 12 to 14
// configurations. The choice depends only on the configurations' fields,
// not on their tags.
func Subset(all []Config) []Config {
	idx := subsetIndices(all)
	out := make([]Config, 0, len(idx))
	for _, i := range idx {
		c := all[i]
		c.Tags = slices.Clone(c.Tags)
		if !slices.Contains(c.Tags, TagSubset) {
			c.Tags = append(c.Tags, TagSubset)
		}
		out = append(out, c)
	}
	return out
}

// subsetIndices picks, for the i-th topology (in order of appearance), the
// variant with protocol i%2, mode (i/2)%2 and placement i%3, which already
// covers protocols, modes and placements; then, for every combination goal
// still unmet, the first configuration meeting it from a topology with the
// fewest picks so far; then bottleneck targets up to subsetMin.
func subsetIndices(all []Config) []int {
	var topos []string
	byTopo := map[string][]int{}
	for i, c := range all {
		if _, ok := byTopo[c.Topology]; !ok {
			topos = append(topos, c.Topology)
		}
		byTopo[c.Topology] = append(byTopo[c.Topology], i)
	}
	picked := map[int]bool{}
	count := map[string]int{}
	add := func(i int) {
		picked[i] = true
		count[all[i].Topology]++
	}
	for ti, topo := range topos {
		proto, conc, pl := Protocols[ti%2], (ti/2)%2 == 1, Placements[ti%3]
		best, score := -1, -1
		for _, i := range byTopo[topo] {
			c := all[i]
			s := 0
			if c.Placement == pl {
				s += 4
			}
			if c.Protocol == proto {
				s += 2
			}
			if c.Concurrent == conc {
				s++
			}
			if s > score {
				best, score = i, s
			}
		}
		add(best)
	}

	type goal func(Config) bool
	var goals []goal
	for _, p := range Protocols {
		for _, conc := range []bool{false, true} {
			for _, b := range []bool{true, false} {
				goals = append(goals, func(c Config) bool {
					return c.Protocol == p && c.Concurrent == conc && c.TargetIsBottleneck == b
				})
			}
		}
	}
	for _, pl := range Placements {
		for _, b := range []bool{true, false} {
			goals = append(goals, func(c Config) bool { return c.Placement == pl && c.TargetIsBottleneck == b })
		}
		for _, p := range Protocols {
			goals = append(goals, func(c Config) bool { return c.Placement == pl && c.Protocol == p })
		}
		for _, conc := range []bool{false, true} {
			goals = append(goals, func(c Config) bool { return c.Placement == pl && c.Concurrent == conc })
		}
	}
	for _, g := range goals {
		met := false
		for i := range picked {
			if g(all[i]) {
				met = true
				break
			}
		}
		if met {
			continue
		}
		best := -1
		for i, c := range all {
			if !picked[i] && g(c) && (best < 0 || count[c.Topology] < count[all[best].Topology]) {
				best = i
			}
		}
		if best >= 0 {
			add(best)
		}
	}
	// Fill up to subsetMin with bottleneck targets (the points where the
	// throughput really moves) of topologies that have none yet, each time
	// with the least represented protocol x mode pair.
	pairCount := func(c Config) int {
		n := 0
		for i := range picked {
			if all[i].Protocol == c.Protocol && all[i].Concurrent == c.Concurrent {
				n++
			}
		}
		return n
	}
	for _, topo := range topos {
		if len(picked) >= subsetMin {
			break
		}
		if slices.ContainsFunc(byTopo[topo], func(i int) bool { return picked[i] && all[i].TargetIsBottleneck }) {
			continue
		}
		best := -1
		for _, i := range byTopo[topo] {
			if all[i].TargetIsBottleneck && (best < 0 || pairCount(all[i]) < pairCount(all[best])) {
				best = i
			}
		}
		if best >= 0 {
			add(best)
		}
	}
	idx := make([]int, 0, len(picked))
	for i := range picked {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	return idx
}
