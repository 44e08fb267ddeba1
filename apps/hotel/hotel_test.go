package hotel_test

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/slowpoke-dev/slowpoke/apps/hotel"
	"github.com/slowpoke-dev/slowpoke/apps/internal/apptest"
)

const seed = 1

func TestSpec(t *testing.T) {
	apptest.CheckSpec(t, "app.yaml", hotel.App, "profile", map[string]float64{"search": 80, "reserve": 20})
}

func TestData(t *testing.T) {
	hotels := hotel.GenerateHotels(seed)
	if !reflect.DeepEqual(hotels, hotel.GenerateHotels(seed)) {
		t.Error("same seed gave different hotels")
	}
	if reflect.DeepEqual(hotels, hotel.GenerateHotels(seed+1)) {
		t.Error("different seeds gave the same hotels")
	}
	if len(hotels) != hotel.NumHotels {
		t.Fatalf("%d hotels", len(hotels))
	}
	for i, h := range hotels {
		a := h.Profile.Address
		if h.Profile.ID != fmt.Sprint(i+1) || h.Capacity < 1 || len(h.Rooms) == 0 ||
			a.Lat < hotel.CenterLat-hotel.SpanLat || a.Lat > hotel.CenterLat+hotel.SpanLat ||
			a.Lon < hotel.CenterLon-hotel.SpanLon || a.Lon > hotel.CenterLon+hotel.SpanLon {
			t.Errorf("bad hotel %+v", h)
		}
	}
}

func TestDatesAndPrices(t *testing.T) {
	for _, c := range []struct {
		in, out string
		nights  int
		ok      bool
	}{
		{"2026-03-10", "2026-03-12", 2, true},
		{"2026-12-31", "2027-01-01", 1, true},
		{"2026-03-10", "2026-03-10", 0, false},
		{"2026-03-10", "2026-03-09", 0, false},
		{"2026-03-10", "2026-05-10", 0, false},
		{"10/03/2026", "2026-03-12", 0, false},
	} {
		_, n, err := hotel.ParseDates(c.in, c.out)
		if (err == nil) != c.ok || n != c.nights {
			t.Errorf("ParseDates(%s, %s) = %d, %v; want %d nights, ok %v", c.in, c.out, n, err, c.nights, c.ok)
		}
	}
	// 2026-03-10 is a Tuesday, 2026-03-13 a Friday, 2026-07-07 a Tuesday.
	for _, c := range []struct {
		in, out string
		want    float64
	}{
		{"2026-03-10", "2026-03-11", 100},
		{"2026-03-10", "2026-03-12", 200},
		{"2026-03-13", "2026-03-14", 120},
		{"2026-07-07", "2026-07-08", 115},
	} {
		first, nights, _ := hotel.ParseDates(c.in, c.out)
		if got := hotel.StayPrice(100, first, nights); got != c.want {
			t.Errorf("StayPrice(100, %s..%s) = %v, want %v", c.in, c.out, got, c.want)
		}
	}
}

// nearest computes independently which hotels a search at the point finds.
func nearest(hotels []hotel.Hotel, lat, lon float64) []string {
	type hit struct {
		id string
		d  float64
	}
	var hits []hit
	for _, h := range hotels {
		if d := hotel.DistanceKm(lat, lon, h.Profile.Address.Lat, h.Profile.Address.Lon); d <= hotel.MaxDistanceKm {
			hits = append(hits, hit{h.Profile.ID, d})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Compare(a.d, b.d) })
	var ids []string
	for _, h := range hits[:min(len(hits), hotel.NearbyCount)] {
		ids = append(ids, h.id)
	}
	slices.Sort(ids)
	return ids
}

func search(t *testing.T, base string, lat, lon float64, in, out string) hotel.SearchReply {
	t.Helper()
	q := url.Values{"lat": {fmt.Sprint(lat)}, "lon": {fmt.Sprint(lon)}, "in_date": {in}, "out_date": {out}}
	var reply hotel.SearchReply
	apptest.GetJSON(t, base+"/hotels?"+q.Encode(), &reply)
	return reply
}

func ids(reply hotel.SearchReply) []string {
	var out []string
	for _, h := range reply.Hotels {
		out = append(out, h.ID)
	}
	slices.Sort(out)
	return out
}

func TestHotelReservation(t *testing.T) {
	c := apptest.Start(t, hotel.App, seed)
	base := c.URL("frontend")
	hotels := hotel.GenerateHotels(seed)
	byID := map[string]hotel.Hotel{}
	for _, h := range hotels {
		byID[h.Profile.ID] = h
	}
	users := hotel.GenerateUsers()

	t.Run("workload requests", func(t *testing.T) {
		apptest.SendAll(t, base, apptest.LoadSpec(t, "app.yaml"), 3)
	})

	t.Run("search", func(t *testing.T) {
		for _, h := range hotels[:10] {
			lat, lon := h.Profile.Address.Lat+0.01, h.Profile.Address.Lon-0.01
			reply := search(t, base, lat, lon, "2026-04-09", "2026-04-11")
			if got, want := ids(reply), nearest(hotels, lat, lon); !reflect.DeepEqual(got, want) {
				t.Errorf("near hotel %s: found %v, want %v", h.Profile.ID, got, want)
			}
			first, nights, _ := hotel.ParseDates("2026-04-09", "2026-04-11")
			for i, r := range reply.Hotels {
				cheapest := byID[r.ID].Rooms[0] // rooms are generated cheapest first
				if r.RatePlan.TotalRate != hotel.StayPrice(cheapest.BookableRate, first, nights) || r.Name != byID[r.ID].Profile.Name {
					t.Errorf("hotel %s: %+v", r.ID, r)
				}
				if i > 0 && r.RatePlan.TotalRate < reply.Hotels[i-1].RatePlan.TotalRate {
					t.Error("results not cheapest first")
				}
			}
		}
		// Far from every hotel, nothing is found.
		if reply := search(t, base, 40.7128, -74.0060, "2026-04-09", "2026-04-10"); len(reply.Hotels) != 0 {
			t.Errorf("found %d hotels in New York", len(reply.Hotels))
		}
	})

	t.Run("reservation beyond capacity", func(t *testing.T) {
		h := hotels[0]
		u := users[3]
		reserve := func(number int, in, out string) (int, []byte) {
			return apptest.Post(t, base+"/reservation", hotel.ReservationRequest{
				Username: u.Username, Password: u.Password, HotelID: h.Profile.ID, InDate: in, OutDate: out, Number: number,
			})
		}
		lat, lon := h.Profile.Address.Lat, h.Profile.Address.Lon
		if !slices.Contains(ids(search(t, base, lat, lon, "2026-03-10", "2026-03-11")), h.Profile.ID) {
			t.Fatal("hotel not found before booking")
		}
		if code, body := reserve(h.Capacity-1, "2026-03-10", "2026-03-12"); code != http.StatusOK {
			t.Fatalf("booking all but one room: %d %s", code, body)
		}
		if code, body := reserve(1, "2026-03-11", "2026-03-13"); code != http.StatusOK {
			t.Fatalf("booking the last room: %d %s", code, body)
		}
		if code, body := reserve(1, "2026-03-09", "2026-03-12"); code != http.StatusConflict {
			t.Errorf("booking beyond capacity: %d %s, want 409", code, body)
		}
		if code, body := reserve(1, "2026-03-10", "2026-03-11"); code != http.StatusOK {
			t.Errorf("booking the night that has one room left: %d %s", code, body)
		}
		if code, body := reserve(1, "2026-03-12", "2026-03-13"); code != http.StatusOK {
			t.Errorf("booking another night: %d %s", code, body)
		}
		full := ids(search(t, base, lat, lon, "2026-03-11", "2026-03-12"))
		if slices.Contains(full, h.Profile.ID) {
			t.Error("full hotel still offered")
		}
		if want := nearest(hotels, lat, lon); len(full) != len(want)-1 {
			t.Errorf("search found %v; want %v without %s", full, want, h.Profile.ID)
		}
		if !slices.Contains(ids(search(t, base, lat, lon, "2026-03-13", "2026-03-14")), h.Profile.ID) {
			t.Error("hotel not offered on a free night")
		}
	})

	t.Run("errors", func(t *testing.T) {
		u := users[0]
		for _, c := range []struct {
			req  hotel.ReservationRequest
			want int
		}{
			{hotel.ReservationRequest{Username: u.Username, Password: "wrong", HotelID: "5"}, http.StatusUnauthorized},
			{hotel.ReservationRequest{Username: "nobody", Password: "x", HotelID: "5"}, http.StatusUnauthorized},
			{hotel.ReservationRequest{Username: u.Username, Password: u.Password, HotelID: "999"}, http.StatusNotFound},
			{hotel.ReservationRequest{Username: u.Username, Password: u.Password, HotelID: "5", InDate: "2026-01-05", OutDate: "2026-01-04"}, http.StatusBadRequest},
			{hotel.ReservationRequest{Username: u.Username, Password: u.Password, HotelID: "5", Number: -2}, http.StatusBadRequest},
		} {
			if code, body := apptest.Post(t, base+"/reservation", c.req); code != c.want {
				t.Errorf("%+v: %d %s, want %d", c.req, code, body, c.want)
			}
		}
		if code, _ := apptest.Do(t, http.MethodGet, base+"/hotels?lat=x&lon=1", nil, ""); code != http.StatusBadRequest {
			t.Errorf("bad latitude: %d", code)
		}
	})
}

// TestConcurrentReservations books one room more than a hotel has from many
// goroutines: exactly one booking must be refused.
func TestConcurrentReservations(t *testing.T) {
	c := apptest.Start(t, hotel.App, seed)
	base := c.URL("frontend")
	hotels := hotel.GenerateHotels(seed)
	h := slices.MinFunc(hotels, func(a, b hotel.Hotel) int { return cmp.Compare(a.Capacity, b.Capacity) })
	u := hotel.GenerateUsers()[1]
	const workers = 8
	total := h.Capacity/2 + 1 // bookings of 2 rooms, one more than fits
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	next := make(chan struct{}, total)
	for range total {
		next <- struct{}{}
	}
	close(next)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				body := fmt.Sprintf(`{"username":%q,"password":%q,"hotel_id":%q,"in_date":"2026-02-02","out_date":"2026-02-04","number":2}`, u.Username, u.Password, h.Profile.ID)
				code, _, err := apptest.Send(http.MethodPost, base+"/reservation", body)
				if err != nil {
					code = -1
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if want := map[int]int{http.StatusOK: h.Capacity / 2, http.StatusConflict: total - h.Capacity/2}; !reflect.DeepEqual(codes, want) {
		t.Errorf("outcomes %v, want %v (capacity %d)", codes, want, h.Capacity)
	}
}
