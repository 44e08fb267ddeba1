package social

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"sync"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

// TimelineCap is how many entries a timeline keeps: the newest.
const TimelineCap = 1000

type entry struct {
	postID, ts int64
}

func compareEntries(a, b entry) int {
	if c := cmp.Compare(a.ts, b.ts); c != 0 {
		return c
	}
	return cmp.Compare(a.postID, b.postID)
}

const shards = 64

// timelines holds a timeline per user, oldest entry first, sharded by user
// to keep lock contention low.
type timelines struct {
	shards [shards]struct {
		mu sync.RWMutex
		m  map[int64][]entry
	}
}

func newTimelines(initial map[int64][]entry) *timelines {
	t := &timelines{}
	for i := range t.shards {
		t.shards[i].m = map[int64][]entry{}
	}
	for user, es := range initial {
		slices.SortFunc(es, compareEntries)
		if len(es) > TimelineCap {
			es = slices.Clone(es[len(es)-TimelineCap:])
		}
		t.shards[user%shards].m[user] = es
	}
	return t
}

func (t *timelines) add(user int64, e entry) {
	sh := &t.shards[user%shards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	es := sh.m[user]
	i, _ := slices.BinarySearchFunc(es, e, compareEntries)
	es = slices.Insert(es, i, e)
	if len(es) > 2*TimelineCap {
		es = slices.Clone(es[len(es)-TimelineCap:])
	}
	sh.m[user] = es
}

// read returns post ids [start, stop) of the timeline, newest first.
func (t *timelines) read(user int64, start, stop int) []int64 {
	sh := &t.shards[user%shards]
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	es := sh.m[user]
	n := min(len(es), TimelineCap)
	stop = min(stop, n)
	ids := make([]int64, 0, max(stop-start, 0))
	for i := start; i < stop; i++ {
		ids = append(ids, es[len(es)-1-i].postID)
	}
	return ids
}

func checkRange(req *ReadTimelineRequest) error {
	if err := checkUser(req.UserID); err != nil {
		return err
	}
	if req.Start < 0 || req.Stop < req.Start {
		return svc.Errorf(http.StatusBadRequest, "bad range [%d, %d)", req.Start, req.Stop)
	}
	return nil
}

// readPosts reads the posts of ids from post-storage.
func readPosts(ctx context.Context, storage *svc.Client, ids []int64) (*Posts, error) {
	if len(ids) == 0 {
		return &Posts{Posts: []Post{}}, nil
	}
	var out Posts
	if err := storage.Call(ctx, "/read", ReadPostsRequest{PostIDs: ids}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// userTimeline holds each user's own posts.
type userTimeline struct {
	lines   *timelines
	storage *svc.Client
}

func newUserTimeline(seed uint64, client func(string) *svc.Client) *userTimeline {
	initial := map[int64][]entry{}
	for _, p := range GeneratePosts(seed) {
		u := p.Creator.UserID
		initial[u] = append(initial[u], entry{p.PostID, p.Timestamp})
	}
	return &userTimeline{lines: newTimelines(initial), storage: client("post-storage")}
}

func (s *userTimeline) register(m *svc.Mux) {
	m.HandleFunc("POST /write", svc.JSON(s.write))
	m.HandleFunc("POST /read", svc.JSON(s.read))
}

func (s *userTimeline) write(_ context.Context, req *WriteTimelineRequest) (*Empty, error) {
	if err := checkUser(req.UserID); err != nil {
		return nil, err
	}
	s.lines.add(req.UserID, entry{req.PostID, req.Timestamp})
	return &Empty{}, nil
}

func (s *userTimeline) read(ctx context.Context, req *ReadTimelineRequest) (*Posts, error) {
	if err := checkRange(req); err != nil {
		return nil, err
	}
	return readPosts(ctx, s.storage, s.lines.read(req.UserID, req.Start, req.Stop))
}

// homeTimeline holds, for each user, the posts of the users they follow and
// the posts that mention them.
type homeTimeline struct {
	lines   *timelines
	storage *svc.Client
	graph   *svc.Client
}

func newHomeTimeline(seed uint64, client func(string) *svc.Client) *homeTimeline {
	adj := Adjacency(GenerateGraph(seed))
	initial := map[int64][]entry{}
	for _, p := range GeneratePosts(seed) {
		for _, f := range adj[p.Creator.UserID] {
			initial[f] = append(initial[f], entry{p.PostID, p.Timestamp})
		}
	}
	return &homeTimeline{lines: newTimelines(initial), storage: client("post-storage"), graph: client("social-graph")}
}

func (s *homeTimeline) register(m *svc.Mux) {
	m.HandleFunc("POST /write", svc.JSON(s.write))
	m.HandleFunc("POST /read", svc.JSON(s.read))
}

// write fans the post out to the author's followers, asked of social-graph,
// and to the users it mentions.
func (s *homeTimeline) write(ctx context.Context, req *WriteTimelineRequest) (*Empty, error) {
	if err := checkUser(req.UserID); err != nil {
		return nil, err
	}
	var followers UserIDs
	if err := s.graph.Call(ctx, "/followers", UserRequest{UserID: req.UserID}, &followers); err != nil {
		return nil, err
	}
	e := entry{req.PostID, req.Timestamp}
	done := make(map[int64]bool, len(followers.UserIDs)+len(req.UserMentionIDs))
	for _, list := range [][]int64{followers.UserIDs, req.UserMentionIDs} {
		for _, u := range list {
			if done[u] || checkUser(u) != nil {
				continue
			}
			done[u] = true
			s.lines.add(u, e)
		}
	}
	return &Empty{}, nil
}

func (s *homeTimeline) read(ctx context.Context, req *ReadTimelineRequest) (*Posts, error) {
	if err := checkRange(req); err != nil {
		return nil, err
	}
	return readPosts(ctx, s.storage, s.lines.read(req.UserID, req.Start, req.Stop))
}
