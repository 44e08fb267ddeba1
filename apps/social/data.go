package social

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Size of the generated network: the node and edge counts of the Facebook
// graph socfb-Reed98 that the paper uses, and its initial posts.
const (
	NumUsers     = 962
	NumEdges     = 18812
	PostsPerUser = 10
)

// Username returns the name of user id.
func Username(id int64) string { return fmt.Sprintf("username_%d", id) }

// Edge is an undirected friendship, U < V.
type Edge struct{ U, V int64 }

// initialClique is the size of the fully connected core that preferential
// attachment grows from.
const initialClique = 20

// GenerateGraph returns the friendship graph generated from seed: NumUsers
// users and exactly NumEdges distinct undirected edges, no self-loops,
// connected, with the heavy-tailed degrees of preferential attachment
// (Barabási–Albert). Each new user befriends 19 or 20 distinct earlier users
// picked with probability proportional to their degree; the mix of 19s and
// 20s makes the edge count exact. Users are then relabelled at random so that
// the hubs are not the lowest ids. Edges are sorted.
func GenerateGraph(seed uint64) []Edge {
	r := rand.New(rand.NewPCG(seed, 0x50_0001))
	const k = initialClique
	coreEdges := k * (k - 1) / 2
	newUsers := NumUsers - k
	rest := NumEdges - coreEdges
	m := rest / newUsers           // links of most new users
	extra := rest - m*newUsers     // users with one link more
	links := make([]int, newUsers) // links per new user
	for i := range links {
		links[i] = m
		if i < extra {
			links[i]++
		}
	}
	r.Shuffle(len(links), func(i, j int) { links[i], links[j] = links[j], links[i] })

	edges := make([]Edge, 0, NumEdges)
	// ends holds each endpoint of each edge: a uniform pick from it is a
	// degree-proportional pick of a user.
	ends := make([]int64, 0, 2*NumEdges)
	for u := range int64(k) {
		for v := u + 1; v < k; v++ {
			edges = append(edges, Edge{u, v})
			ends = append(ends, u, v)
		}
	}
	picked := make(map[int64]bool)
	for i, n := range links {
		u := int64(k + i)
		clear(picked)
		targets := make([]int64, 0, n)
		for len(targets) < n {
			v := ends[r.IntN(len(ends))]
			if !picked[v] {
				picked[v] = true
				targets = append(targets, v)
			}
		}
		for _, v := range targets {
			edges = append(edges, Edge{v, u})
			ends = append(ends, v, u)
		}
	}
	perm := r.Perm(NumUsers)
	for i, e := range edges {
		u, v := int64(perm[e.U]), int64(perm[e.V])
		edges[i] = Edge{min(u, v), max(u, v)}
	}
	slices.SortFunc(edges, func(a, b Edge) int {
		if a.U != b.U {
			return int(a.U - b.U)
		}
		return int(a.V - b.V)
	})
	return edges
}

// Adjacency returns each user's friends, sorted.
func Adjacency(edges []Edge) [][]int64 {
	adj := make([][]int64, NumUsers)
	for _, e := range edges {
		adj[e.U] = append(adj[e.U], e.V)
		adj[e.V] = append(adj[e.V], e.U)
	}
	for _, a := range adj {
		slices.Sort(a)
	}
	return adj
}

// Creator is the author of a post.
type Creator struct {
	UserID   int64  `json:"user_id"`
	Username string `json:"username"`
}

// UserMention is a user mentioned in a post.
type UserMention struct {
	UserID   int64  `json:"user_id"`
	Username string `json:"username"`
}

// URL is a link of a post, shortened.
type URL struct {
	ShortenedURL string `json:"shortened_url"`
	ExpandedURL  string `json:"expanded_url"`
}

// Post is a post.
type Post struct {
	PostID       int64         `json:"post_id"`
	Creator      Creator       `json:"creator"`
	Text         string        `json:"text"`
	UserMentions []UserMention `json:"user_mentions"`
	URLs         []URL         `json:"urls"`
	Timestamp    int64         `json:"timestamp"` // Unix milliseconds
	PostType     string        `json:"post_type"`
}

// epoch is the start of the year the initial posts were written in.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

var words = strings.Fields(`the a weekend coffee morning run city park music new book movie
	dinner friends great today tomorrow finally happy tired busy sunny rainy trip train
	project deadline campus lecture library game win lost found best worst little big
	garden kitchen recipe photo concert beach mountain coding paper review draft`)

// RandomText returns a post text of a few words, mentioning up to two users
// and sometimes a link, as the original benchmark's workload does.
func RandomText(r *rand.Rand) string {
	var b strings.Builder
	for i := range 8 + r.IntN(16) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[r.IntN(len(words))])
	}
	for range r.IntN(3) {
		b.WriteString(" @" + Username(int64(r.IntN(NumUsers))))
	}
	if r.IntN(4) == 0 {
		fmt.Fprintf(&b, " https://example.com/%s/%d", words[r.IntN(len(words))], r.IntN(100000))
	}
	return b.String()
}

// GeneratePosts returns the initial posts generated from seed:
// PostsPerUser per user, user u's k-th post with id u*PostsPerUser+k+1, in
// order of id, each user's in order of time within 2024. Their texts go
// through the same parsing as composed posts.
func GeneratePosts(seed uint64) []Post {
	r := rand.New(rand.NewPCG(seed, 0x50_0002))
	const year = 366 * 24 * 3600 * 1000
	posts := make([]Post, 0, NumUsers*PostsPerUser)
	times := make([]int64, PostsPerUser)
	for u := range int64(NumUsers) {
		for k := range times {
			times[k] = epoch + r.Int64N(year)
		}
		slices.Sort(times)
		for k, ts := range times {
			p := ParsePost(RandomText(r))
			p.PostID = u*PostsPerUser + int64(k) + 1
			p.Creator = Creator{UserID: u, Username: Username(u)}
			p.Timestamp = ts
			posts = append(posts, p)
		}
	}
	return posts
}
