package social_test

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/slowpoke-dev/slowpoke/apps/internal/apptest"
	"github.com/slowpoke-dev/slowpoke/apps/social"
)

const seed = 1

func TestSpec(t *testing.T) {
	apptest.CheckSpec(t, "app.yaml", social.App, "home-timeline", map[string]float64{
		"read-home-timeline": 60, "read-user-timeline": 30, "compose-post": 10,
	})
}

func TestGraph(t *testing.T) {
	edges := social.GenerateGraph(seed)
	if !reflect.DeepEqual(edges, social.GenerateGraph(seed)) {
		t.Error("same seed gave different graphs")
	}
	if reflect.DeepEqual(edges, social.GenerateGraph(seed+1)) {
		t.Error("different seeds gave the same graph")
	}
	if len(edges) != social.NumEdges {
		t.Errorf("%d edges, want %d", len(edges), social.NumEdges)
	}
	seen := map[social.Edge]bool{}
	for _, e := range edges {
		if e.U >= e.V || e.U < 0 || e.V >= social.NumUsers {
			t.Fatalf("bad edge %v (self-loop, unordered or out of range)", e)
		}
		if seen[e] {
			t.Fatalf("duplicate edge %v", e)
		}
		seen[e] = true
	}
	adj := social.Adjacency(edges)
	// Connected: a search from user 0 reaches every user.
	reached := map[int64]bool{0: true}
	queue := []int64{0}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, v := range adj[u] {
			if !reached[v] {
				reached[v] = true
				queue = append(queue, v)
			}
		}
	}
	if len(reached) != social.NumUsers {
		t.Errorf("%d of %d users reachable from user 0", len(reached), social.NumUsers)
	}
	// Heavy-tailed: hubs far above the mean degree, most users below it.
	degrees := make([]int, len(adj))
	for u, a := range adj {
		degrees[u] = len(a)
	}
	slices.Sort(degrees)
	mean := 2 * float64(social.NumEdges) / social.NumUsers
	if maxDeg, median := degrees[len(degrees)-1], degrees[len(degrees)/2]; float64(maxDeg) < 4*mean || float64(median) > mean {
		t.Errorf("degrees: max %d median %d mean %.1f; want a heavy tail", maxDeg, median, mean)
	}
}

func TestPosts(t *testing.T) {
	posts := social.GeneratePosts(seed)
	if !reflect.DeepEqual(posts, social.GeneratePosts(seed)) {
		t.Error("same seed gave different posts")
	}
	if len(posts) != social.NumUsers*social.PostsPerUser {
		t.Fatalf("%d posts", len(posts))
	}
	perUser := map[int64]int{}
	for i, p := range posts {
		if p.PostID != int64(i+1) || p.Text == "" || p.Timestamp == 0 {
			t.Fatalf("post %d: %+v", i, p)
		}
		perUser[p.Creator.UserID]++
	}
	for u := range int64(social.NumUsers) {
		if perUser[u] != social.PostsPerUser {
			t.Fatalf("user %d has %d posts", u, perUser[u])
		}
	}
}

func TestParsePost(t *testing.T) {
	p := social.ParsePost("hi @username_3 and @username_5 @username_3 @username_99999 see https://example.com/x ok")
	want := []social.UserMention{{UserID: 3, Username: "username_3"}, {UserID: 5, Username: "username_5"}}
	if !reflect.DeepEqual(p.UserMentions, want) {
		t.Errorf("mentions %+v, want %+v", p.UserMentions, want)
	}
	short := social.ShortenURL("https://example.com/x")
	if len(p.URLs) != 1 || p.URLs[0].ExpandedURL != "https://example.com/x" || p.URLs[0].ShortenedURL != short ||
		!strings.Contains(p.Text, short) || strings.Contains(p.Text, "https://example.com") {
		t.Errorf("urls %+v, text %q", p.URLs, p.Text)
	}
}

func homeTimeline(t *testing.T, base string, user int64, stop int) []social.Post {
	t.Helper()
	var out social.Posts
	apptest.GetJSON(t, fmt.Sprintf("%s/home-timeline?user_id=%d&stop=%d", base, user, stop), &out)
	return out.Posts
}

func userTimeline(t *testing.T, base string, user int64, stop int) []social.Post {
	t.Helper()
	var out social.Posts
	apptest.GetJSON(t, fmt.Sprintf("%s/user-timeline?user_id=%d&stop=%d", base, user, stop), &out)
	return out.Posts
}

func TestSocialNetwork(t *testing.T) {
	c := apptest.Start(t, social.App, seed)
	base := c.URL("frontend")
	adj := social.Adjacency(social.GenerateGraph(seed))
	posts := social.GeneratePosts(seed)

	t.Run("workload requests", func(t *testing.T) {
		apptest.SendAll(t, base, apptest.LoadSpec(t, "app.yaml"), 3)
	})

	t.Run("initial timelines", func(t *testing.T) {
		const user = 17
		got := userTimeline(t, base, user, 20)
		if len(got) != social.PostsPerUser {
			t.Fatalf("user timeline of %d posts, want %d", len(got), social.PostsPerUser)
		}
		for i, p := range got {
			if want := posts[user*social.PostsPerUser+social.PostsPerUser-1-i]; !reflect.DeepEqual(p, want) {
				t.Errorf("user timeline[%d] = %+v, want %+v", i, p, want)
			}
		}
		home := homeTimeline(t, base, user, social.DefaultPageSize)
		if len(home) != social.DefaultPageSize {
			t.Fatalf("home timeline of %d posts", len(home))
		}
		for i, p := range home {
			if !slices.Contains(adj[user], p.Creator.UserID) {
				t.Errorf("home timeline shows a post of %d, not a friend of %d", p.Creator.UserID, user)
			}
			if i > 0 && p.Timestamp > home[i-1].Timestamp {
				t.Errorf("home timeline not newest first")
			}
		}
		// The newest of all friends' posts comes first.
		var newest int64
		for _, f := range adj[user] {
			newest = max(newest, posts[f*social.PostsPerUser+social.PostsPerUser-1].Timestamp)
		}
		if home[0].Timestamp != newest {
			t.Errorf("home timeline starts at %d, want %d", home[0].Timestamp, newest)
		}
	})

	t.Run("compose fans out", func(t *testing.T) {
		const author = 42
		var mentioned int64 = 0
		for slices.Contains(adj[author], mentioned) || mentioned == author {
			mentioned++
		}
		text := fmt.Sprintf("hello @username_%d look https://example.com/compose", mentioned)
		var composed social.StorePostRequest
		apptest.PostJSON(t, base+"/compose", map[string]any{"user_id": author, "text": text}, &composed)
		p := composed.Post
		if p.Creator.UserID != author || len(p.UserMentions) != 1 || len(p.URLs) != 1 {
			t.Fatalf("composed %+v", p)
		}
		if got := userTimeline(t, base, author, 1); len(got) != 1 || !reflect.DeepEqual(got[0], p) {
			t.Errorf("author's user timeline starts with %+v, want %+v", got, p)
		}
		for _, f := range append(slices.Clone(adj[author]), mentioned) {
			if got := homeTimeline(t, base, f, 1); len(got) != 1 || got[0].PostID != p.PostID {
				t.Fatalf("home timeline of %d (follower or mentioned) does not start with post %d: %+v", f, p.PostID, got)
			}
		}
		for _, other := range []int64{author, (mentioned + 1) % social.NumUsers} {
			if slices.Contains(adj[author], other) {
				continue
			}
			for _, q := range homeTimeline(t, base, other, 5) {
				if q.PostID == p.PostID {
					t.Errorf("post %d reached %d, who neither follows %d nor is mentioned", p.PostID, other, author)
				}
			}
		}
	})

	t.Run("follow then compose", func(t *testing.T) {
		const author, fan = 100, 101
		if slices.Contains(adj[author], fan) {
			t.Skip("already friends")
		}
		apptest.PostJSON(t, base+"/follow", social.FollowRequest{UserID: fan, FolloweeID: author}, nil)
		var followers social.UserIDs
		apptest.GetJSON(t, fmt.Sprintf("%s/followers?user_id=%d", base, author), &followers)
		if !slices.Contains(followers.UserIDs, fan) {
			t.Fatalf("%d not among the followers of %d", fan, author)
		}
		var composed social.StorePostRequest
		apptest.PostJSON(t, base+"/compose", map[string]any{"user_id": author, "text": "news"}, &composed)
		if got := homeTimeline(t, base, fan, 1); len(got) != 1 || got[0].PostID != composed.Post.PostID {
			t.Errorf("new follower's home timeline: %+v", got)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, c := range []struct {
			method, path, body string
			want               int
		}{
			{"GET", "/home-timeline?user_id=5000", "", http.StatusNotFound},
			{"GET", "/user-timeline?user_id=x", "", http.StatusBadRequest},
			{"GET", "/user-timeline?user_id=1&start=5&stop=2", "", http.StatusBadRequest},
			{"POST", "/compose", `{"user_id":-1,"text":"x"}`, http.StatusNotFound},
			{"POST", "/compose", `{"user_id":1,"text":"   "}`, http.StatusBadRequest},
			{"POST", "/follow", `{"user_id":1,"followee_id":1}`, http.StatusBadRequest},
		} {
			if code, body := apptest.Do(t, c.method, base+c.path, nil, c.body); code != c.want {
				t.Errorf("%s %s %s: %d %s, want %d", c.method, c.path, c.body, code, body, c.want)
			}
		}
	})
}

// TestConcurrentCompose composes from many goroutines; run with -race.
func TestConcurrentCompose(t *testing.T) {
	c := apptest.Start(t, social.App, seed)
	base := c.URL("frontend")
	const workers, each, author = 8, 4, 7
	errc := make(chan error, workers)
	for range workers {
		go func() {
			var err error
			for range each {
				if err = apptest.Try(http.MethodPost, base+"/compose", fmt.Sprintf(`{"user_id":%d}`, author)); err != nil {
					break
				}
				if err = apptest.Try(http.MethodGet, base+"/home-timeline", ""); err != nil {
					break
				}
			}
			errc <- err
		}()
	}
	for range workers {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	got := userTimeline(t, base, author, 100)
	if len(got) != workers*each+social.PostsPerUser {
		t.Errorf("user timeline of %d posts, want %d", len(got), workers*each+social.PostsPerUser)
	}
	ids := map[int64]bool{}
	for _, p := range got {
		ids[p.PostID] = true
	}
	if len(ids) != len(got) {
		t.Error("duplicate post ids")
	}
}
