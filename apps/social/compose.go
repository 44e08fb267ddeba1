package social

import (
	"context"
	"hash/fnv"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

var (
	mentionRE = regexp.MustCompile(`@username_(\d+)`)
	urlRE     = regexp.MustCompile(`https?://[^\s]+`)
)

// ParsePost builds a post from its text: users mentioned as @username_N
// (existing users only, each once) and links, which are replaced by short
// links in the text.
func ParsePost(text string) Post {
	p := Post{PostType: "POST", UserMentions: []UserMention{}, URLs: []URL{}}
	if !strings.Contains(text, "@") && !strings.Contains(text, "http") {
		p.Text = text
		return p
	}
	seen := map[int64]bool{}
	for _, m := range mentionRE.FindAllStringSubmatch(text, -1) {
		id, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || checkUser(id) != nil || seen[id] {
			continue
		}
		seen[id] = true
		p.UserMentions = append(p.UserMentions, UserMention{UserID: id, Username: Username(id)})
	}
	p.Text = urlRE.ReplaceAllStringFunc(text, func(u string) string {
		short := ShortenURL(u)
		p.URLs = append(p.URLs, URL{ShortenedURL: short, ExpandedURL: u})
		return short
	})
	return p
}

// ShortenURL returns the short link of u.
func ShortenURL(u string) string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	h := fnv.New64a()
	h.Write([]byte(u))
	n := h.Sum64()
	var b strings.Builder
	b.WriteString("http://short-url.com/")
	for range 10 {
		b.WriteByte(alphabet[n%62])
		n /= 62
	}
	return b.String()
}

type composePost struct {
	storage, userTimeline, homeTimeline *svc.Client
	lastID                              atomic.Int64
}

func newComposePost(client func(string) *svc.Client) *composePost {
	return &composePost{
		storage:      client("post-storage"),
		userTimeline: client("user-timeline"),
		homeTimeline: client("home-timeline"),
	}
}

func (s *composePost) register(m *svc.Mux) {
	m.HandleFunc("POST /compose", svc.JSON(s.compose))
}

// newID returns a post id: the time in milliseconds shifted left 16 bits,
// made strictly increasing. These ids are far above the initial posts'.
func (s *composePost) newID() int64 {
	now := time.Now().UnixMilli() << 16
	for {
		last := s.lastID.Load()
		id := max(now, last+1)
		if s.lastID.CompareAndSwap(last, id) {
			return id
		}
	}
}

func (s *composePost) compose(ctx context.Context, req *ComposePostRequest) (*StorePostRequest, error) {
	if err := checkUser(req.UserID); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, svc.Errorf(http.StatusBadRequest, "empty post")
	}
	p := ParsePost(req.Text)
	p.PostID = s.newID()
	p.Creator = Creator{UserID: req.UserID, Username: Username(req.UserID)}
	p.Timestamp = time.Now().UnixMilli()
	if req.PostType != "" {
		p.PostType = req.PostType
	}
	mentions := make([]int64, len(p.UserMentions))
	for i, m := range p.UserMentions {
		mentions[i] = m.UserID
	}
	// Store the post and write both timelines concurrently, as the original
	// service does.
	if err := svc.Parallel(
		func() error { return s.storage.Call(ctx, "/store", StorePostRequest{Post: p}, nil) },
		func() error {
			return s.userTimeline.Call(ctx, "/write", WriteTimelineRequest{UserID: req.UserID, PostID: p.PostID, Timestamp: p.Timestamp}, nil)
		},
		func() error {
			return s.homeTimeline.Call(ctx, "/write", WriteTimelineRequest{UserID: req.UserID, PostID: p.PostID, Timestamp: p.Timestamp, UserMentionIDs: mentions}, nil)
		},
	); err != nil {
		return nil, err
	}
	return &StorePostRequest{Post: p}, nil
}
