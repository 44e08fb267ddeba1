package movie

// Messages of the internal HTTP/JSON API (POST, JSON bodies).

// Empty is the empty message.
type Empty struct{}

// MovieRequest names a movie.
type MovieRequest struct {
	MovieID string `json:"movie_id"`
}

// CastInfoRequest asks for people by id.
type CastInfoRequest struct {
	CastInfoIDs []int64 `json:"cast_info_ids"`
}

// CastInfos lists people.
type CastInfos struct {
	CastInfo []CastInfo `json:"cast_info"`
}

// PlotRequest asks for a plot.
type PlotRequest struct {
	PlotID int64 `json:"plot_id"`
}

// UniqueID is a fresh review id.
type UniqueID struct {
	ID int64 `json:"id"`
}

// LoginRequest checks a user's password.
type LoginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// LoginResult says whether the password is correct.
type LoginResult struct {
	Correct bool `json:"correct"`
}

// UsernameRequest names a user.
type UsernameRequest struct {
	Username string `json:"username"`
}

// UserID is a user's id.
type UserID struct {
	UserID int64 `json:"user_id"`
}

// TitleRequest names a movie by title.
type TitleRequest struct {
	Title string `json:"title"`
}

// StoreReviewRequest stores (or composes) a review.
type StoreReviewRequest struct {
	Review Review `json:"review"`
}

// ReadReviewsRequest asks for reviews by id.
type ReadReviewsRequest struct {
	ReviewIDs []int64 `json:"review_ids"`
}

// Reviews lists reviews, newest first where they are a movie's or a user's.
type Reviews struct {
	Reviews []Review `json:"reviews"`
}

// UploadMovieReviewRequest adds a review to a movie's list.
type UploadMovieReviewRequest struct {
	MovieID   string `json:"movie_id"`
	ReviewID  int64  `json:"review_id"`
	Timestamp int64  `json:"timestamp"`
	Rating    int    `json:"rating"`
}

// UploadUserReviewRequest adds a review to a user's list.
type UploadUserReviewRequest struct {
	UserID    int64 `json:"user_id"`
	ReviewID  int64 `json:"review_id"`
	Timestamp int64 `json:"timestamp"`
}

// ReadMovieReviewsRequest reads reviews [Start, Stop) of a movie, newest
// first.
type ReadMovieReviewsRequest struct {
	MovieID string `json:"movie_id"`
	Start   int    `json:"start"`
	Stop    int    `json:"stop"`
}

// MovieReviews are a movie's latest reviews and its rating.
type MovieReviews struct {
	Reviews    []Review `json:"reviews"`
	NumReviews int      `json:"num_reviews"`
	AvgRating  float64  `json:"avg_rating"`
}

// ReadUserReviewsRequest reads reviews [Start, Stop) of a user, newest first.
type ReadUserReviewsRequest struct {
	UserID int64 `json:"user_id"`
	Start  int   `json:"start"`
	Stop   int   `json:"stop"`
}

// PageRequest asks for a movie page with reviews [ReviewStart, ReviewStop).
type PageRequest struct {
	MovieID     string `json:"movie_id"`
	ReviewStart int    `json:"review_start"`
	ReviewStop  int    `json:"review_stop"`
}

// Page is a movie page.
type Page struct {
	MovieInfo  MovieInfo  `json:"movie_info"`
	CastInfo   []CastInfo `json:"cast_info"`
	Plot       string     `json:"plot"`
	Reviews    []Review   `json:"reviews"`
	NumReviews int        `json:"num_reviews"`
	AvgRating  float64    `json:"avg_rating"`
}
