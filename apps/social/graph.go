package social

import (
	"context"
	"net/http"
	"slices"
	"sync"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

// socialGraph stores who follows whom. A friendship of the generated graph
// is a follow in both directions.
type socialGraph struct {
	mu        sync.RWMutex
	followers [][]int64 // sorted
	followees [][]int64 // sorted
}

func newSocialGraph(seed uint64) *socialGraph {
	adj := Adjacency(GenerateGraph(seed))
	g := &socialGraph{followers: adj, followees: make([][]int64, len(adj))}
	for u, a := range adj {
		g.followees[u] = slices.Clone(a)
	}
	return g
}

func (g *socialGraph) register(m *svc.Mux) {
	m.HandleFunc("POST /followers", svc.JSON(g.getFollowers))
	m.HandleFunc("POST /followees", svc.JSON(g.getFollowees))
	m.HandleFunc("POST /follow", svc.JSON(g.follow))
	m.HandleFunc("POST /unfollow", svc.JSON(g.unfollow))
}

func (g *socialGraph) list(lists [][]int64, user int64) (*UserIDs, error) {
	if err := checkUser(user); err != nil {
		return nil, err
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	return &UserIDs{UserIDs: slices.Clone(lists[user])}, nil
}

func (g *socialGraph) getFollowers(_ context.Context, req *UserRequest) (*UserIDs, error) {
	return g.list(g.followers, req.UserID)
}

func (g *socialGraph) getFollowees(_ context.Context, req *UserRequest) (*UserIDs, error) {
	return g.list(g.followees, req.UserID)
}

func checkFollow(req *FollowRequest) error {
	if err := checkUser(req.UserID); err != nil {
		return err
	}
	if err := checkUser(req.FolloweeID); err != nil {
		return err
	}
	if req.UserID == req.FolloweeID {
		return svc.Errorf(http.StatusBadRequest, "a user cannot follow themself")
	}
	return nil
}

func insertSorted(s []int64, v int64) []int64 {
	if i, found := slices.BinarySearch(s, v); !found {
		return slices.Insert(s, i, v)
	}
	return s
}

func removeSorted(s []int64, v int64) []int64 {
	if i, found := slices.BinarySearch(s, v); found {
		return slices.Delete(s, i, i+1)
	}
	return s
}

func (g *socialGraph) follow(_ context.Context, req *FollowRequest) (*Empty, error) {
	if err := checkFollow(req); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.followees[req.UserID] = insertSorted(g.followees[req.UserID], req.FolloweeID)
	g.followers[req.FolloweeID] = insertSorted(g.followers[req.FolloweeID], req.UserID)
	return &Empty{}, nil
}

func (g *socialGraph) unfollow(_ context.Context, req *FollowRequest) (*Empty, error) {
	if err := checkFollow(req); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.followees[req.UserID] = removeSorted(g.followees[req.UserID], req.FolloweeID)
	g.followers[req.FolloweeID] = removeSorted(g.followers[req.FolloweeID], req.UserID)
	return &Empty{}, nil
}
