package movie

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

// DefaultReviews is how many reviews a page shows by default.
const DefaultReviews = 10

type frontend struct {
	page, user, uniqueID, movieID, composeReview, userReviews *svc.Client

	movies []MovieInfo
	users  []User
	rnd    *svc.Rand
}

func newFrontend(seed uint64, client func(string) *svc.Client) *frontend {
	return &frontend{
		page:          client("page"),
		user:          client("user"),
		uniqueID:      client("unique-id"),
		movieID:       client("movie-id"),
		composeReview: client("compose-review"),
		userReviews:   client("user-reviews"),
		movies:        GenerateData(seed).Movies,
		users:         GenerateUsers(),
		rnd:           svc.NewRand(seed, 0x30_0f00),
	}
}

func (f *frontend) register(m *svc.Mux) {
	m.HandleFunc("GET /page", f.moviePage)
	m.HandleFunc("GET /page/{movie_id}", f.moviePage)
	m.HandleFunc("POST /review", svc.JSON(f.compose))
	m.HandleFunc("GET /user-reviews/{username}", f.reviewsOf)
}

// window reads the start and stop query parameters.
func window(r *http.Request) (int, int, error) {
	q := r.URL.Query()
	start, stop := 0, -1
	var err error
	if v := q.Get("start"); v != "" {
		if start, err = strconv.Atoi(v); err != nil {
			return 0, 0, svc.Errorf(http.StatusBadRequest, "bad start %q", v)
		}
	}
	if v := q.Get("stop"); v != "" {
		if stop, err = strconv.Atoi(v); err != nil {
			return 0, 0, svc.Errorf(http.StatusBadRequest, "bad stop %q", v)
		}
	} else {
		stop = start + DefaultReviews
	}
	return start, stop, nil
}

// moviePage serves GET /page/{movie_id}?start=&stop= (reviews [start, stop),
// newest first; default the 10 newest); without a movie id, a random movie.
func (f *frontend) moviePage(w http.ResponseWriter, r *http.Request) {
	req := PageRequest{MovieID: r.PathValue("movie_id")}
	var err error
	if req.ReviewStart, req.ReviewStop, err = window(r); err != nil {
		svc.WriteError(w, err)
		return
	}
	if req.MovieID == "" {
		req.MovieID = f.movies[f.rnd.IntN(len(f.movies))].MovieID
	}
	var page Page
	if err := f.page.Call(r.Context(), "/page", req, &page); err != nil {
		svc.WriteError(w, err)
		return
	}
	svc.WriteJSON(w, http.StatusOK, page)
}

// ComposeRequest is the body of POST /review. Missing fields are chosen at
// random: a user (with their password), a movie, a rating and a text.
type ComposeRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Title    string `json:"title"`
	Rating   *int   `json:"rating"`
	Text     string `json:"text"`
}

// compose logs the user in, gets a review id, the user's id and the movie's
// id, and hands the review to compose-review.
func (f *frontend) compose(ctx context.Context, req *ComposeRequest) (*StoreReviewRequest, error) {
	rating := 0
	f.rnd.Do(func(r *rand.Rand) {
		if req.Username == "" {
			u := f.users[r.IntN(len(f.users))]
			req.Username, req.Password = u.Username, u.Password
		}
		if req.Title == "" {
			req.Title = f.movies[r.IntN(len(f.movies))].Title
		}
		rating = r.IntN(11)
		if req.Text == "" {
			req.Text = RandomReviewText(r)
		}
	})
	if req.Rating != nil {
		rating = *req.Rating
	}
	if rating < 0 || rating > 10 {
		return nil, svc.Errorf(http.StatusBadRequest, "rating %d: want 0 to 10", rating)
	}
	var login LoginResult
	if err := f.user.Call(ctx, "/login", LoginRequest{Username: req.Username, Password: req.Password}, &login); err != nil {
		return nil, err
	}
	if !login.Correct {
		return nil, svc.Errorf(http.StatusUnauthorized, "wrong username or password")
	}
	var id UniqueID
	if err := f.uniqueID.Call(ctx, "/unique-id", Empty{}, &id); err != nil {
		return nil, err
	}
	var user UserID
	if err := f.user.Call(ctx, "/user-id", UsernameRequest{Username: req.Username}, &user); err != nil {
		return nil, err
	}
	var movie MovieRequest
	if err := f.movieID.Call(ctx, "/movie-id", TitleRequest{Title: req.Title}, &movie); err != nil {
		return nil, err
	}
	review := Review{ReviewID: id.ID, UserID: user.UserID, MovieID: movie.MovieID, Text: req.Text, Rating: rating}
	var out StoreReviewRequest
	if err := f.composeReview.Call(ctx, "/compose", StoreReviewRequest{Review: review}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// reviewsOf serves GET /user-reviews/{username}?start=&stop=.
func (f *frontend) reviewsOf(w http.ResponseWriter, r *http.Request) {
	start, stop, err := window(r)
	if err != nil {
		svc.WriteError(w, err)
		return
	}
	var user UserID
	if err := f.user.Call(r.Context(), "/user-id", UsernameRequest{Username: r.PathValue("username")}, &user); err != nil {
		svc.WriteError(w, err)
		return
	}
	var out Reviews
	if err := f.userReviews.Call(r.Context(), "/read", ReadUserReviewsRequest{UserID: user.UserID, Start: start, Stop: stop}, &out); err != nil {
		svc.WriteError(w, err)
		return
	}
	svc.WriteJSON(w, http.StatusOK, out)
}
