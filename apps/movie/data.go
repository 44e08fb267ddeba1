package movie

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Size of the generated data.
const (
	NumMovies = 500
	NumCast   = 2000
	NumUsers  = 1000
	// MaxInitialReviews is the most reviews a movie starts with.
	MaxInitialReviews = 4
)

// CastMember is a role in a movie.
type CastMember struct {
	CastID     int    `json:"cast_id"`
	Character  string `json:"character"`
	CastInfoID int64  `json:"cast_info_id"`
}

// MovieInfo describes a movie.
type MovieInfo struct {
	MovieID      string       `json:"movie_id"`
	Title        string       `json:"title"`
	Year         int          `json:"year"`
	PlotID       int64        `json:"plot_id"`
	Casts        []CastMember `json:"casts"`
	ThumbnailIDs []string     `json:"thumbnail_ids"`
	PhotoIDs     []string     `json:"photo_ids"`
	VideoIDs     []string     `json:"video_ids"`
}

// CastInfo describes a person.
type CastInfo struct {
	CastInfoID int64  `json:"cast_info_id"`
	Name       string `json:"name"`
	Gender     bool   `json:"gender"`
	Intro      string `json:"intro"`
}

// Plot is a movie's plot.
type Plot struct {
	PlotID int64  `json:"plot_id"`
	Plot   string `json:"plot"`
}

// Data is the generated catalogue.
type Data struct {
	Movies []MovieInfo
	Casts  []CastInfo
	Plots  []Plot
}

var (
	titleAdj   = []string{"Silent", "Last", "Crimson", "Hidden", "Broken", "Golden", "Distant", "Electric", "Frozen", "Wild", "Secret", "Midnight", "Lost", "Iron", "Paper", "Burning"}
	titleNoun  = []string{"River", "Empire", "Garden", "Signal", "Harbor", "Machine", "Kingdom", "Letter", "Horizon", "Station", "Orchard", "Frontier", "Mirror", "Voyage", "Island", "Circus"}
	firstNames = []string{"Ada", "Ben", "Chloe", "Diego", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kara", "Liam", "Maya", "Noah", "Olga", "Pavel", "Quinn", "Rosa", "Sami", "Tara", "Uma", "Victor", "Wen", "Yara", "Zoe"}
	lastNames  = []string{"Abbott", "Berg", "Castro", "Dubois", "Evans", "Fischer", "Garcia", "Hansen", "Ito", "Jensen", "Kowalski", "Larsen", "Moreau", "Nakamura", "Okafor", "Petrov", "Rossi", "Silva", "Tanaka", "Underwood", "Varga", "Weber", "Young", "Zhang"}
	plotWords  = strings.Fields(`a young detective discovers an old map that leads across the city while her
		brother hides a secret from the family and a storm closes the only road out of town so that
		friends must choose between loyalty and escape before the final night of the festival`)
	reviewWords = strings.Fields(`great boring stunning slow moving clever funny dark beautiful predictable
		acting script music ending plot characters pacing visuals twist performance cast story`)
)

func sentence(r *rand.Rand, vocab []string, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = vocab[r.IntN(len(vocab))]
	}
	s := strings.Join(w, " ")
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// GenerateData returns the catalogue generated from seed: NumMovies movies
// with distinct ids and titles, each with its plot (plot id = index+1) and
// 3 to 8 roles played by the NumCast people (cast info ids 1 to NumCast).
func GenerateData(seed uint64) *Data {
	r := rand.New(rand.NewPCG(seed, 0x30_0001))
	d := &Data{}
	for i := range NumCast {
		first, last := firstNames[r.IntN(len(firstNames))], lastNames[r.IntN(len(lastNames))]
		d.Casts = append(d.Casts, CastInfo{
			CastInfoID: int64(i + 1),
			Name:       first + " " + last,
			Gender:     r.IntN(2) == 0,
			Intro:      fmt.Sprintf("%s %s has appeared in %d films.", first, last, 1+r.IntN(60)),
		})
	}
	ids, titles := map[string]bool{}, map[string]bool{}
	for len(d.Movies) < NumMovies {
		id := fmt.Sprintf("tt%07d", r.IntN(10_000_000))
		year := 1950 + r.IntN(76)
		title := fmt.Sprintf("The %s %s", titleAdj[r.IntN(len(titleAdj))], titleNoun[r.IntN(len(titleNoun))])
		if r.IntN(3) == 0 {
			title += " " + []string{"II", "III", "Returns", "Rising", "Forever"}[r.IntN(5)]
		}
		title = fmt.Sprintf("%s (%d)", title, year)
		if ids[id] || titles[title] {
			continue
		}
		ids[id], titles[title] = true, true
		n := int64(len(d.Movies) + 1)
		m := MovieInfo{MovieID: id, Title: title, Year: year, PlotID: n}
		for c := range 3 + r.IntN(6) {
			m.Casts = append(m.Casts, CastMember{
				CastID:     c,
				Character:  firstNames[r.IntN(len(firstNames))],
				CastInfoID: int64(1 + r.IntN(NumCast)),
			})
		}
		for k := range 1 + r.IntN(3) {
			m.ThumbnailIDs = append(m.ThumbnailIDs, fmt.Sprintf("%s-thumb-%d", id, k))
			m.PhotoIDs = append(m.PhotoIDs, fmt.Sprintf("%s-photo-%d", id, k))
		}
		m.VideoIDs = []string{id + "-trailer"}
		d.Movies = append(d.Movies, m)
		var plot strings.Builder
		for s := range 3 + r.IntN(3) {
			if s > 0 {
				plot.WriteByte(' ')
			}
			plot.WriteString(sentence(r, plotWords, 8+r.IntN(10)))
		}
		d.Plots = append(d.Plots, Plot{PlotID: n, Plot: plot.String()})
	}
	return d
}

// User is a registered user.
type User struct {
	UserID    int64
	Username  string
	FirstName string
	LastName  string
	Password  string // clear text, for the workload and tests
}

// GenerateUsers returns the users: ids 1 to NumUsers, username_<id-1> with
// password password_<id-1>.
func GenerateUsers() []User {
	users := make([]User, NumUsers)
	for i := range users {
		users[i] = User{
			UserID:    int64(i + 1),
			Username:  fmt.Sprintf("username_%d", i),
			FirstName: firstNames[i%len(firstNames)],
			LastName:  lastNames[i%len(lastNames)],
			Password:  fmt.Sprintf("password_%d", i),
		}
	}
	return users
}

// Review is a user's review of a movie.
type Review struct {
	ReviewID  int64  `json:"review_id"`
	UserID    int64  `json:"user_id"`
	MovieID   string `json:"movie_id"`
	Text      string `json:"text"`
	Rating    int    `json:"rating"`    // 0 to 10
	Timestamp int64  `json:"timestamp"` // Unix milliseconds
}

// RandomReviewText makes up the text of a review.
func RandomReviewText(r *rand.Rand) string {
	return sentence(r, reviewWords, 10+r.IntN(20))
}

// GenerateReviews returns the initial reviews generated from seed: 0 to
// MaxInitialReviews per movie by random users, ids 1, 2, ... in order,
// written in 2025 in order of id.
func GenerateReviews(seed uint64) []Review {
	d := GenerateData(seed)
	r := rand.New(rand.NewPCG(seed, 0x30_0002))
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	var reviews []Review
	for _, m := range d.Movies {
		for range r.IntN(MaxInitialReviews + 1) {
			reviews = append(reviews, Review{
				UserID:  int64(1 + r.IntN(NumUsers)),
				MovieID: m.MovieID,
				Text:    RandomReviewText(r),
				Rating:  r.IntN(11),
			})
		}
	}
	times := make([]int64, len(reviews))
	const year = 365 * 24 * 3600 * 1000
	for i := range times {
		times[i] = start + r.Int64N(year)
	}
	slices.Sort(times)
	for i := range reviews {
		reviews[i].ReviewID = int64(i + 1)
		reviews[i].Timestamp = times[i]
	}
	return reviews
}

// passwordHash is how the user service stores passwords: salted SHA-256,
// iterated to cost about what a real password check costs.
func passwordHash(salt, password string) string {
	sum := sha256.Sum256([]byte(salt + password))
	for range 64 {
		sum = sha256.Sum256(sum[:])
	}
	return hex.EncodeToString(sum[:])
}
