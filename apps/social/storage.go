package social

import (
	"context"
	"net/http"
	"sync"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

type postStorage struct {
	mu    sync.RWMutex
	posts map[int64]Post
}

func newPostStorage(seed uint64) *postStorage {
	s := &postStorage{posts: make(map[int64]Post, NumUsers*PostsPerUser)}
	for _, p := range GeneratePosts(seed) {
		s.posts[p.PostID] = p
	}
	return s
}

func (s *postStorage) register(m *svc.Mux) {
	m.HandleFunc("POST /store", svc.JSON(s.store))
	m.HandleFunc("POST /read", svc.JSON(s.read))
}

func (s *postStorage) store(_ context.Context, req *StorePostRequest) (*Empty, error) {
	if req.Post.PostID == 0 {
		return nil, svc.Errorf(http.StatusBadRequest, "post without id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.posts[req.Post.PostID]; dup {
		return nil, svc.Errorf(http.StatusConflict, "post %d exists", req.Post.PostID)
	}
	s.posts[req.Post.PostID] = req.Post
	return &Empty{}, nil
}

// read returns the posts in the order asked, skipping unknown ids.
func (s *postStorage) read(_ context.Context, req *ReadPostsRequest) (*Posts, error) {
	out := &Posts{Posts: make([]Post, 0, len(req.PostIDs))}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, id := range req.PostIDs {
		if p, ok := s.posts[id]; ok {
			out.Posts = append(out.Posts, p)
		}
	}
	return out, nil
}
