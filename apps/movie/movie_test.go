package movie_test

import (
	"fmt"
	"math"
	"net/http"
	"reflect"
	"testing"

	"github.com/slowpoke-dev/slowpoke/apps/internal/apptest"
	"github.com/slowpoke-dev/slowpoke/apps/movie"
)

const seed = 1

func TestSpec(t *testing.T) {
	apptest.CheckSpec(t, "app.yaml", movie.App, "movie-reviews", map[string]float64{"page": 90, "compose-review": 10})
}

func TestData(t *testing.T) {
	d := movie.GenerateData(seed)
	if !reflect.DeepEqual(d, movie.GenerateData(seed)) {
		t.Error("same seed gave different data")
	}
	if reflect.DeepEqual(d, movie.GenerateData(seed+1)) {
		t.Error("different seeds gave the same data")
	}
	if len(d.Movies) != movie.NumMovies || len(d.Plots) != movie.NumMovies || len(d.Casts) != movie.NumCast {
		t.Fatalf("%d movies, %d plots, %d people", len(d.Movies), len(d.Plots), len(d.Casts))
	}
	ids, titles := map[string]bool{}, map[string]bool{}
	for i, m := range d.Movies {
		if ids[m.MovieID] || titles[m.Title] || m.PlotID != d.Plots[i].PlotID || len(m.Casts) < 3 {
			t.Errorf("bad or repeated movie %+v", m)
		}
		ids[m.MovieID], titles[m.Title] = true, true
		for _, c := range m.Casts {
			if c.CastInfoID < 1 || c.CastInfoID > movie.NumCast {
				t.Errorf("movie %s: cast info id %d", m.MovieID, c.CastInfoID)
			}
		}
	}
	reviews := movie.GenerateReviews(seed)
	if !reflect.DeepEqual(reviews, movie.GenerateReviews(seed)) {
		t.Error("same seed gave different reviews")
	}
	if len(reviews) < movie.NumMovies {
		t.Errorf("only %d initial reviews", len(reviews))
	}
	for i, r := range reviews {
		if r.ReviewID != int64(i+1) || !ids[r.MovieID] || r.UserID < 1 || r.UserID > movie.NumUsers || r.Rating < 0 || r.Rating > 10 {
			t.Fatalf("bad review %+v", r)
		}
	}
}

func getPage(t *testing.T, base, id string) movie.Page {
	t.Helper()
	var p movie.Page
	apptest.GetJSON(t, base+"/page/"+id, &p)
	return p
}

func TestMovieReview(t *testing.T) {
	c := apptest.Start(t, movie.App, seed)
	base := c.URL("frontend")
	d := movie.GenerateData(seed)
	casts := map[int64]movie.CastInfo{}
	for _, ci := range d.Casts {
		casts[ci.CastInfoID] = ci
	}
	initial := map[string][]movie.Review{}
	for _, r := range movie.GenerateReviews(seed) {
		initial[r.MovieID] = append(initial[r.MovieID], r)
	}
	users := movie.GenerateUsers()

	t.Run("workload requests", func(t *testing.T) {
		apptest.SendAll(t, base, apptest.LoadSpec(t, "app.yaml"), 3)
	})

	t.Run("page", func(t *testing.T) {
		// The workload above may have reviewed some movies; check those
		// it did not.
		checked := 0
		for i, m := range d.Movies[:40] {
			p := getPage(t, base, m.MovieID)
			if p.NumReviews != len(initial[m.MovieID]) {
				continue
			}
			checked++
			if !reflect.DeepEqual(p.MovieInfo, m) || p.Plot != d.Plots[i].Plot || len(p.CastInfo) != len(m.Casts) {
				t.Fatalf("page of %s: %+v", m.MovieID, p)
			}
			for j, ci := range p.CastInfo {
				if ci != casts[m.Casts[j].CastInfoID] {
					t.Errorf("cast %d of %s: %+v", j, m.MovieID, ci)
				}
			}
			want := initial[m.MovieID]
			sum := 0
			for j, r := range want {
				sum += r.Rating
				if got := p.Reviews[len(want)-1-j]; got != r {
					t.Errorf("review %d of %s: %+v, want %+v", j, m.MovieID, got, r)
				}
			}
			if len(want) > 0 && math.Abs(p.AvgRating-float64(sum)/float64(len(want))) > 0.01 {
				t.Errorf("average rating of %s: %v, want %v", m.MovieID, p.AvgRating, float64(sum)/float64(len(want)))
			}
		}
		if checked < 20 {
			t.Errorf("only %d pages checked", checked)
		}
	})

	t.Run("compose then read", func(t *testing.T) {
		m, u := d.Movies[7], users[12]
		before := getPage(t, base, m.MovieID)
		var composed movie.StoreReviewRequest
		apptest.PostJSON(t, base+"/review", map[string]any{
			"username": u.Username, "password": u.Password, "title": m.Title, "rating": 9, "text": "A masterpiece.",
		}, &composed)
		r := composed.Review
		if r.MovieID != m.MovieID || r.UserID != u.UserID || r.Rating != 9 || r.Text != "A masterpiece." || r.ReviewID == 0 {
			t.Fatalf("composed %+v", r)
		}
		after := getPage(t, base, m.MovieID)
		if after.NumReviews != before.NumReviews+1 || len(after.Reviews) == 0 || after.Reviews[0] != r {
			t.Errorf("page after composing: %d reviews (was %d), first %+v; want %+v", after.NumReviews, before.NumReviews, after.Reviews, r)
		}
		var mine movie.Reviews
		apptest.GetJSON(t, base+"/user-reviews/"+u.Username, &mine)
		if len(mine.Reviews) == 0 || mine.Reviews[0] != r {
			t.Errorf("user's reviews start with %+v, want %+v", mine.Reviews, r)
		}
	})

	t.Run("errors", func(t *testing.T) {
		u, m := users[0], d.Movies[0]
		for _, c := range []struct {
			body string
			want int
		}{
			{fmt.Sprintf(`{"username":%q,"password":"nope","title":%q}`, u.Username, m.Title), http.StatusUnauthorized},
			{fmt.Sprintf(`{"username":%q,"password":%q,"title":"No Such Movie"}`, u.Username, u.Password), http.StatusNotFound},
			{fmt.Sprintf(`{"username":%q,"password":%q,"title":%q,"rating":11}`, u.Username, u.Password, m.Title), http.StatusBadRequest},
		} {
			if code, body := apptest.Post(t, base+"/review", c.body); code != c.want {
				t.Errorf("%s: %d %s, want %d", c.body, code, body, c.want)
			}
		}
		if code, _ := apptest.Do(t, http.MethodGet, base+"/page/tt-none", nil, ""); code != http.StatusNotFound {
			t.Errorf("unknown movie: %d", code)
		}
		if code, _ := apptest.Do(t, http.MethodGet, base+"/page/"+m.MovieID+"?start=4&stop=1", nil, ""); code != http.StatusBadRequest {
			t.Errorf("bad window: %d", code)
		}
	})
}

// TestConcurrentReviews composes reviews of one movie from many goroutines;
// run with -race.
func TestConcurrentReviews(t *testing.T) {
	c := apptest.Start(t, movie.App, seed)
	base := c.URL("frontend")
	m := movie.GenerateData(seed).Movies[3]
	before := getPage(t, base, m.MovieID)
	const workers, each = 8, 4
	errc := make(chan error, workers)
	for w := range workers {
		go func() {
			u := movie.GenerateUsers()[w]
			body := fmt.Sprintf(`{"username":%q,"password":%q,"title":%q}`, u.Username, u.Password, m.Title)
			var err error
			for range each {
				if err = apptest.Try(http.MethodPost, base+"/review", body); err != nil {
					break
				}
				if err = apptest.Try(http.MethodGet, base+"/page", ""); err != nil {
					break
				}
			}
			errc <- err
		}()
	}
	for range workers {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	var p movie.Page
	apptest.GetJSON(t, base+fmt.Sprintf("/page/%s?stop=%d", m.MovieID, workers*each+10), &p)
	if p.NumReviews != before.NumReviews+workers*each || len(p.Reviews) != p.NumReviews {
		t.Errorf("%d reviews (%d shown), want %d", p.NumReviews, len(p.Reviews), before.NumReviews+workers*each)
	}
	ids := map[int64]bool{}
	for _, r := range p.Reviews {
		ids[r.ReviewID] = true
	}
	if len(ids) != len(p.Reviews) {
		t.Error("duplicate review ids")
	}
}
