package social

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

// DefaultPageSize is how many posts a timeline read returns by default.
const DefaultPageSize = 10

type frontend struct {
	compose, home, user, graph *svc.Client
	rnd                        *svc.Rand
}

func newFrontend(cfg svc.Config, client func(string) *svc.Client) *frontend {
	return &frontend{
		compose: client("compose-post"),
		home:    client("home-timeline"),
		user:    client("user-timeline"),
		graph:   client("social-graph"),
		rnd:     svc.NewRand(cfg.Seed, 0x50_0f00),
	}
}

func (f *frontend) register(m *svc.Mux) {
	m.HandleFunc("GET /home-timeline", f.readTimeline(f.home))
	m.HandleFunc("GET /user-timeline", f.readTimeline(f.user))
	m.HandleFunc("POST /compose", svc.JSON(f.composePost))
	m.HandleFunc("GET /followers", f.followers)
	m.HandleFunc("POST /follow", svc.JSON(f.follow("/follow")))
	m.HandleFunc("POST /unfollow", svc.JSON(f.follow("/unfollow")))
}

// userParam returns the user_id query parameter, or a random user.
func (f *frontend) userParam(r *http.Request) (int64, error) {
	v := r.URL.Query().Get("user_id")
	if v == "" {
		return int64(f.rnd.IntN(NumUsers)), nil
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, svc.Errorf(http.StatusBadRequest, "bad user_id %q", v)
	}
	return id, checkUser(id)
}

func intParam(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, svc.Errorf(http.StatusBadRequest, "bad %s %q", name, v)
	}
	return n, nil
}

// readTimeline serves GET /home-timeline and GET /user-timeline with query
// parameters user_id (default: a random user), start (default 0) and stop
// (default start+DefaultPageSize).
func (f *frontend) readTimeline(backend *svc.Client) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req := ReadTimelineRequest{}
		var err error
		if req.UserID, err = f.userParam(r); err != nil {
			svc.WriteError(w, err)
			return
		}
		if req.Start, err = intParam(r, "start", 0); err != nil {
			svc.WriteError(w, err)
			return
		}
		if req.Stop, err = intParam(r, "stop", req.Start+DefaultPageSize); err != nil {
			svc.WriteError(w, err)
			return
		}
		var out Posts
		if err := backend.Call(r.Context(), "/read", req, &out); err != nil {
			svc.WriteError(w, err)
			return
		}
		svc.WriteJSON(w, http.StatusOK, out)
	}
}

// ComposeRequest is the body of POST /compose. Without a user, a random one
// posts; without a text, a random one (with mentions and links) is made up.
type ComposeRequest struct {
	UserID   *int64 `json:"user_id"`
	Text     string `json:"text"`
	PostType string `json:"post_type"`
}

func (f *frontend) composePost(ctx context.Context, req *ComposeRequest) (*StorePostRequest, error) {
	creq := ComposePostRequest{Text: req.Text, PostType: req.PostType}
	f.rnd.Do(func(r *rand.Rand) {
		if req.UserID == nil {
			creq.UserID = int64(r.IntN(NumUsers))
		}
		if creq.Text == "" {
			creq.Text = RandomText(r)
		}
	})
	if req.UserID != nil {
		creq.UserID = *req.UserID
	}
	if err := checkUser(creq.UserID); err != nil {
		return nil, err
	}
	creq.Username = Username(creq.UserID)
	var out StorePostRequest
	if err := f.compose.Call(ctx, "/compose", creq, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (f *frontend) followers(w http.ResponseWriter, r *http.Request) {
	user, err := f.userParam(r)
	if err != nil {
		svc.WriteError(w, err)
		return
	}
	var out UserIDs
	if err := f.graph.Call(r.Context(), "/followers", UserRequest{UserID: user}, &out); err != nil {
		svc.WriteError(w, err)
		return
	}
	svc.WriteJSON(w, http.StatusOK, out)
}

func (f *frontend) follow(path string) func(context.Context, *FollowRequest) (*Empty, error) {
	return func(ctx context.Context, req *FollowRequest) (*Empty, error) {
		if err := f.graph.Call(ctx, path, req, nil); err != nil {
			return nil, err
		}
		return &Empty{}, nil
	}
}
