package movie

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

// ---- movie-info, cast-info, plot, movie-id: read-only catalogue ----

type movieInfo struct{ byID map[string]MovieInfo }

func newMovieInfo(seed uint64) *movieInfo {
	s := &movieInfo{byID: map[string]MovieInfo{}}
	for _, m := range GenerateData(seed).Movies {
		s.byID[m.MovieID] = m
	}
	return s
}

func (s *movieInfo) register(m *svc.Mux) { m.HandleFunc("POST /movie-info", svc.JSON(s.read)) }

func (s *movieInfo) read(_ context.Context, req *MovieRequest) (*MovieInfo, error) {
	m, ok := s.byID[req.MovieID]
	if !ok {
		return nil, svc.Errorf(http.StatusNotFound, "no movie %q", req.MovieID)
	}
	return &m, nil
}

type castInfo struct{ byID map[int64]CastInfo }

func newCastInfo(seed uint64) *castInfo {
	s := &castInfo{byID: map[int64]CastInfo{}}
	for _, c := range GenerateData(seed).Casts {
		s.byID[c.CastInfoID] = c
	}
	return s
}

func (s *castInfo) register(m *svc.Mux) { m.HandleFunc("POST /cast-info", svc.JSON(s.read)) }

func (s *castInfo) read(_ context.Context, req *CastInfoRequest) (*CastInfos, error) {
	out := &CastInfos{CastInfo: make([]CastInfo, 0, len(req.CastInfoIDs))}
	for _, id := range req.CastInfoIDs {
		if c, ok := s.byID[id]; ok {
			out.CastInfo = append(out.CastInfo, c)
		}
	}
	return out, nil
}

type plot struct{ byID map[int64]Plot }

func newPlot(seed uint64) *plot {
	s := &plot{byID: map[int64]Plot{}}
	for _, p := range GenerateData(seed).Plots {
		s.byID[p.PlotID] = p
	}
	return s
}

func (s *plot) register(m *svc.Mux) { m.HandleFunc("POST /plot", svc.JSON(s.read)) }

func (s *plot) read(_ context.Context, req *PlotRequest) (*Plot, error) {
	p, ok := s.byID[req.PlotID]
	if !ok {
		return nil, svc.Errorf(http.StatusNotFound, "no plot %d", req.PlotID)
	}
	return &p, nil
}

type movieID struct{ byTitle map[string]string }

func newMovieID(seed uint64) *movieID {
	s := &movieID{byTitle: map[string]string{}}
	for _, m := range GenerateData(seed).Movies {
		s.byTitle[m.Title] = m.MovieID
	}
	return s
}

func (s *movieID) register(m *svc.Mux) { m.HandleFunc("POST /movie-id", svc.JSON(s.lookup)) }

func (s *movieID) lookup(_ context.Context, req *TitleRequest) (*MovieRequest, error) {
	id, ok := s.byTitle[req.Title]
	if !ok {
		return nil, svc.Errorf(http.StatusNotFound, "no movie titled %q", req.Title)
	}
	return &MovieRequest{MovieID: id}, nil
}

// ---- unique-id ----

type uniqueID struct{ last atomic.Int64 }

func newUniqueID() *uniqueID { return &uniqueID{} }

func (s *uniqueID) register(m *svc.Mux) { m.HandleFunc("POST /unique-id", svc.JSON(s.next)) }

// next returns the time in milliseconds shifted left 16 bits, made strictly
// increasing: unique, ordered, and far above the initial reviews' ids.
func (s *uniqueID) next(context.Context, *Empty) (*UniqueID, error) {
	now := time.Now().UnixMilli() << 16
	for {
		last := s.last.Load()
		id := max(now, last+1)
		if s.last.CompareAndSwap(last, id) {
			return &UniqueID{ID: id}, nil
		}
	}
}

// ---- user ----

type userService struct {
	salt   string
	byName map[string]User
	hashes map[string]string
}

func newUserService(seed uint64) *userService {
	s := &userService{salt: fmt.Sprintf("salt-%d-", seed), byName: map[string]User{}, hashes: map[string]string{}}
	for _, u := range GenerateUsers() {
		s.byName[u.Username] = u
		s.hashes[u.Username] = passwordHash(s.salt, u.Password)
	}
	return s
}

func (s *userService) register(m *svc.Mux) {
	m.HandleFunc("POST /login", svc.JSON(s.login))
	m.HandleFunc("POST /user-id", svc.JSON(s.userID))
}

func (s *userService) login(_ context.Context, req *LoginRequest) (*LoginResult, error) {
	want, ok := s.hashes[req.Username]
	got := passwordHash(s.salt, req.Password)
	return &LoginResult{Correct: ok && got == want}, nil
}

func (s *userService) userID(_ context.Context, req *UsernameRequest) (*UserID, error) {
	u, ok := s.byName[req.Username]
	if !ok {
		return nil, svc.Errorf(http.StatusNotFound, "no user %q", req.Username)
	}
	return &UserID{UserID: u.UserID}, nil
}

// ---- review-storage ----

type reviewStorage struct {
	mu      sync.RWMutex
	reviews map[int64]Review
}

func newReviewStorage(seed uint64) *reviewStorage {
	s := &reviewStorage{reviews: map[int64]Review{}}
	for _, r := range GenerateReviews(seed) {
		s.reviews[r.ReviewID] = r
	}
	return s
}

func (s *reviewStorage) register(m *svc.Mux) {
	m.HandleFunc("POST /store", svc.JSON(s.store))
	m.HandleFunc("POST /read", svc.JSON(s.read))
}

func (s *reviewStorage) store(_ context.Context, req *StoreReviewRequest) (*Empty, error) {
	if req.Review.ReviewID == 0 {
		return nil, svc.Errorf(http.StatusBadRequest, "review without id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.reviews[req.Review.ReviewID]; dup {
		return nil, svc.Errorf(http.StatusConflict, "review %d exists", req.Review.ReviewID)
	}
	s.reviews[req.Review.ReviewID] = req.Review
	return &Empty{}, nil
}

func (s *reviewStorage) read(_ context.Context, req *ReadReviewsRequest) (*Reviews, error) {
	out := &Reviews{Reviews: make([]Review, 0, len(req.ReviewIDs))}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, id := range req.ReviewIDs {
		if r, ok := s.reviews[id]; ok {
			out.Reviews = append(out.Reviews, r)
		}
	}
	return out, nil
}

// ---- review lists: movie-reviews and user-reviews ----

// ListCap is how many review ids a movie's or user's list keeps: the newest.
const ListCap = 1000

type listEntry struct{ id, ts int64 }

func compareEntries(a, b listEntry) int {
	if c := cmp.Compare(a.ts, b.ts); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// reviewList is a list of review ids ordered by time, oldest first, with
// rating totals.
type reviewList struct {
	entries     []listEntry
	count       int
	ratingTotal int
}

// reviewLists holds a reviewList per key.
type reviewLists[K comparable] struct {
	mu    sync.RWMutex
	lists map[K]*reviewList
}

func newReviewLists[K comparable]() *reviewLists[K] {
	return &reviewLists[K]{lists: map[K]*reviewList{}}
}

func (l *reviewLists[K]) add(key K, e listEntry, rating int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rl := l.lists[key]
	if rl == nil {
		rl = &reviewList{}
		l.lists[key] = rl
	}
	i, _ := slices.BinarySearchFunc(rl.entries, e, compareEntries)
	rl.entries = slices.Insert(rl.entries, i, e)
	if len(rl.entries) > 2*ListCap {
		rl.entries = slices.Clone(rl.entries[len(rl.entries)-ListCap:])
	}
	rl.count++
	rl.ratingTotal += rating
}

// read returns ids [start, stop) newest first, the review count and the
// average rating.
func (l *reviewLists[K]) read(key K, start, stop int) ([]int64, int, float64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	rl := l.lists[key]
	if rl == nil {
		return []int64{}, 0, 0
	}
	stop = min(stop, len(rl.entries), ListCap)
	ids := make([]int64, 0, max(stop-start, 0))
	for i := start; i < stop; i++ {
		ids = append(ids, rl.entries[len(rl.entries)-1-i].id)
	}
	avg := 0.0
	if rl.count > 0 {
		avg = math.Round(float64(rl.ratingTotal)/float64(rl.count)*100) / 100
	}
	return ids, rl.count, avg
}

func checkRange(start, stop int) error {
	if start < 0 || stop < start {
		return svc.Errorf(http.StatusBadRequest, "bad range [%d, %d)", start, stop)
	}
	return nil
}

func readReviews(ctx context.Context, storage *svc.Client, ids []int64) ([]Review, error) {
	if len(ids) == 0 {
		return []Review{}, nil
	}
	var out Reviews
	if err := storage.Call(ctx, "/read", ReadReviewsRequest{ReviewIDs: ids}, &out); err != nil {
		return nil, err
	}
	return out.Reviews, nil
}

type movieReviews struct {
	lists   *reviewLists[string]
	storage *svc.Client
}

func newMovieReviews(seed uint64, client func(string) *svc.Client) *movieReviews {
	s := &movieReviews{lists: newReviewLists[string](), storage: client("review-storage")}
	for _, r := range GenerateReviews(seed) {
		s.lists.add(r.MovieID, listEntry{r.ReviewID, r.Timestamp}, r.Rating)
	}
	return s
}

func (s *movieReviews) register(m *svc.Mux) {
	m.HandleFunc("POST /upload", svc.JSON(s.upload))
	m.HandleFunc("POST /read", svc.JSON(s.read))
}

func (s *movieReviews) upload(_ context.Context, req *UploadMovieReviewRequest) (*Empty, error) {
	if req.MovieID == "" || req.ReviewID == 0 {
		return nil, svc.Errorf(http.StatusBadRequest, "movie_id and review_id are required")
	}
	s.lists.add(req.MovieID, listEntry{req.ReviewID, req.Timestamp}, req.Rating)
	return &Empty{}, nil
}

func (s *movieReviews) read(ctx context.Context, req *ReadMovieReviewsRequest) (*MovieReviews, error) {
	if err := checkRange(req.Start, req.Stop); err != nil {
		return nil, err
	}
	ids, n, avg := s.lists.read(req.MovieID, req.Start, req.Stop)
	reviews, err := readReviews(ctx, s.storage, ids)
	if err != nil {
		return nil, err
	}
	return &MovieReviews{Reviews: reviews, NumReviews: n, AvgRating: avg}, nil
}

type userReviews struct {
	lists   *reviewLists[int64]
	storage *svc.Client
}

func newUserReviews(seed uint64, client func(string) *svc.Client) *userReviews {
	s := &userReviews{lists: newReviewLists[int64](), storage: client("review-storage")}
	for _, r := range GenerateReviews(seed) {
		s.lists.add(r.UserID, listEntry{r.ReviewID, r.Timestamp}, r.Rating)
	}
	return s
}

func (s *userReviews) register(m *svc.Mux) {
	m.HandleFunc("POST /upload", svc.JSON(s.upload))
	m.HandleFunc("POST /read", svc.JSON(s.read))
}

func (s *userReviews) upload(_ context.Context, req *UploadUserReviewRequest) (*Empty, error) {
	if req.UserID == 0 || req.ReviewID == 0 {
		return nil, svc.Errorf(http.StatusBadRequest, "user_id and review_id are required")
	}
	s.lists.add(req.UserID, listEntry{req.ReviewID, req.Timestamp}, 0)
	return &Empty{}, nil
}

func (s *userReviews) read(ctx context.Context, req *ReadUserReviewsRequest) (*Reviews, error) {
	if err := checkRange(req.Start, req.Stop); err != nil {
		return nil, err
	}
	ids, _, _ := s.lists.read(req.UserID, req.Start, req.Stop)
	reviews, err := readReviews(ctx, s.storage, ids)
	if err != nil {
		return nil, err
	}
	return &Reviews{Reviews: reviews}, nil
}

// ---- compose-review ----

type composeReview struct {
	storage, movieReviews, userReviews *svc.Client
}

func newComposeReview(client func(string) *svc.Client) *composeReview {
	return &composeReview{
		storage:      client("review-storage"),
		movieReviews: client("movie-reviews"),
		userReviews:  client("user-reviews"),
	}
}

func (s *composeReview) register(m *svc.Mux) { m.HandleFunc("POST /compose", svc.JSON(s.compose)) }

// compose stores the review and adds it to the movie's and the user's lists,
// concurrently.
func (s *composeReview) compose(ctx context.Context, req *StoreReviewRequest) (*StoreReviewRequest, error) {
	r := req.Review
	if r.ReviewID == 0 || r.UserID == 0 || r.MovieID == "" {
		return nil, svc.Errorf(http.StatusBadRequest, "review_id, user_id and movie_id are required")
	}
	if r.Rating < 0 || r.Rating > 10 {
		return nil, svc.Errorf(http.StatusBadRequest, "rating %d: want 0 to 10", r.Rating)
	}
	if r.Timestamp == 0 {
		r.Timestamp = time.Now().UnixMilli()
	}
	if err := svc.Parallel(
		func() error { return s.storage.Call(ctx, "/store", StoreReviewRequest{Review: r}, nil) },
		func() error {
			return s.movieReviews.Call(ctx, "/upload", UploadMovieReviewRequest{MovieID: r.MovieID, ReviewID: r.ReviewID, Timestamp: r.Timestamp, Rating: r.Rating}, nil)
		},
		func() error {
			return s.userReviews.Call(ctx, "/upload", UploadUserReviewRequest{UserID: r.UserID, ReviewID: r.ReviewID, Timestamp: r.Timestamp}, nil)
		},
	); err != nil {
		return nil, err
	}
	return &StoreReviewRequest{Review: r}, nil
}

// ---- page ----

type page struct {
	movieInfo, castInfo, plot, movieReviews *svc.Client
}

func newPage(client func(string) *svc.Client) *page {
	return &page{
		movieInfo:    client("movie-info"),
		castInfo:     client("cast-info"),
		plot:         client("plot"),
		movieReviews: client("movie-reviews"),
	}
}

func (s *page) register(m *svc.Mux) { m.HandleFunc("POST /page", svc.JSON(s.read)) }

// read reads the movie's info, then its cast, plot and reviews concurrently.
func (s *page) read(ctx context.Context, req *PageRequest) (*Page, error) {
	var info MovieInfo
	if err := s.movieInfo.Call(ctx, "/movie-info", MovieRequest{MovieID: req.MovieID}, &info); err != nil {
		return nil, err
	}
	castIDs := make([]int64, len(info.Casts))
	for i, c := range info.Casts {
		castIDs[i] = c.CastInfoID
	}
	var cast CastInfos
	var pl Plot
	var reviews MovieReviews
	if err := svc.Parallel(
		func() error { return s.castInfo.Call(ctx, "/cast-info", CastInfoRequest{CastInfoIDs: castIDs}, &cast) },
		func() error { return s.plot.Call(ctx, "/plot", PlotRequest{PlotID: info.PlotID}, &pl) },
		func() error {
			return s.movieReviews.Call(ctx, "/read", ReadMovieReviewsRequest{MovieID: req.MovieID, Start: req.ReviewStart, Stop: req.ReviewStop}, &reviews)
		},
	); err != nil {
		return nil, err
	}
	return &Page{
		MovieInfo: info, CastInfo: cast.CastInfo, Plot: pl.Plot,
		Reviews: reviews.Reviews, NumReviews: reviews.NumReviews, AvgRating: reviews.AvgRating,
	}, nil
}
