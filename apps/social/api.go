package social

import (
	"net/http"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

// Messages of the internal HTTP/JSON API (POST, JSON bodies).

// UserRequest names a user.
type UserRequest struct {
	UserID int64 `json:"user_id"`
}

// UserIDs lists users.
type UserIDs struct {
	UserIDs []int64 `json:"user_ids"`
}

// FollowRequest makes UserID follow (or unfollow) FolloweeID.
type FollowRequest struct {
	UserID     int64 `json:"user_id"`
	FolloweeID int64 `json:"followee_id"`
}

// StorePostRequest stores a post.
type StorePostRequest struct {
	Post Post `json:"post"`
}

// ReadPostsRequest asks for posts by id.
type ReadPostsRequest struct {
	PostIDs []int64 `json:"post_ids"`
}

// Posts is a list of posts, newest first where it is a timeline.
type Posts struct {
	Posts []Post `json:"posts"`
}

// WriteTimelineRequest adds a post to a user's timeline (user-timeline) or
// to the home timelines of the user's followers and of the mentioned users
// (home-timeline).
type WriteTimelineRequest struct {
	UserID         int64   `json:"user_id"`
	PostID         int64   `json:"post_id"`
	Timestamp      int64   `json:"timestamp"`
	UserMentionIDs []int64 `json:"user_mention_ids,omitempty"`
}

// ReadTimelineRequest reads entries [Start, Stop) of a timeline, newest
// first.
type ReadTimelineRequest struct {
	UserID int64 `json:"user_id"`
	Start  int   `json:"start"`
	Stop   int   `json:"stop"`
}

// ComposePostRequest publishes a post.
type ComposePostRequest struct {
	UserID   int64  `json:"user_id"`
	Username string `json:"username"`
	Text     string `json:"text"`
	PostType string `json:"post_type"`
}

// Empty is the empty reply.
type Empty struct{}

func checkUser(id int64) error {
	if id < 0 || id >= NumUsers {
		return svc.Errorf(http.StatusNotFound, "no user %d", id)
	}
	return nil
}
