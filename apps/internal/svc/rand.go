package svc

import (
	"math/rand/v2"
	"sync"
)

// Rand is a seeded random source safe for concurrent use. Front ends use it
// to pick users, products and the like when a request names none, so that
// the fixed requests of a load generator still touch varied data.
type Rand struct {
	mu sync.Mutex
	r  *rand.Rand
}

// NewRand returns a Rand seeded with seed and a stream number (use a
// different stream per purpose).
func NewRand(seed, stream uint64) *Rand {
	return &Rand{r: rand.New(rand.NewPCG(seed, stream))}
}

// IntN returns a uniform int in [0, n).
func (r *Rand) IntN(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.IntN(n)
}

// Float64 returns a uniform float64 in [0, 1).
func (r *Rand) Float64() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Float64()
}

// Do runs fn with the underlying generator held, for several draws at once.
func (r *Rand) Do(fn func(*rand.Rand)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(r.r)
}
