package hotel

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

type frontend struct {
	search, reservation, profile, user *svc.Client
	users                              []User
	rnd                                *svc.Rand
}

func newFrontend(seed uint64, client func(string) *svc.Client) *frontend {
	return &frontend{
		search:      client("search"),
		reservation: client("reservation"),
		profile:     client("profile"),
		user:        client("user"),
		users:       GenerateUsers(),
		rnd:         svc.NewRand(seed, 0x40_0f00),
	}
}

func (f *frontend) register(m *svc.Mux) {
	m.HandleFunc("GET /hotels", f.hotels)
	m.HandleFunc("POST /reservation", svc.JSON(f.reserve))
}

// randomStay returns check-in and check-out dates in Year: 1 to 4 nights.
func randomStay(r *rand.Rand) (string, string) {
	in := time.Date(Year, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(360))
	return in.Format(DateLayout), in.AddDate(0, 0, 1+r.IntN(4)).Format(DateLayout)
}

// HotelResult is a hotel found by a search.
type HotelResult struct {
	Profile
	RatePlan RatePlan `json:"rate_plan"` // the cheapest
}

// SearchReply is the reply to GET /hotels.
type SearchReply struct {
	InDate  string        `json:"in_date"`
	OutDate string        `json:"out_date"`
	Lat     float64       `json:"lat"`
	Lon     float64       `json:"lon"`
	Hotels  []HotelResult `json:"hotels"`
}

// hotels serves GET /hotels?in_date=&out_date=&lat=&lon=: the hotels nearest
// the point (search: geo, rate) that have a room free for the stay
// (reservation), with their profiles (profile), cheapest first. A missing
// point or stay is chosen at random: a point in the hotels' area, a stay of
// 1 to 4 nights in Year.
func (f *frontend) hotels(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	reply := SearchReply{InDate: q.Get("in_date"), OutDate: q.Get("out_date")}
	var err error
	if reply.Lat, err = floatParam(q.Get("lat")); err != nil {
		svc.WriteError(w, err)
		return
	}
	if reply.Lon, err = floatParam(q.Get("lon")); err != nil {
		svc.WriteError(w, err)
		return
	}
	f.rnd.Do(func(rn *rand.Rand) {
		if q.Get("lat") == "" || q.Get("lon") == "" {
			reply.Lat = round6(CenterLat + SpanLat*(2*rn.Float64()-1))
			reply.Lon = round6(CenterLon + SpanLon*(2*rn.Float64()-1))
		}
		if reply.InDate == "" || reply.OutDate == "" {
			reply.InDate, reply.OutDate = randomStay(rn)
		}
	})
	if _, _, err := ParseDates(reply.InDate, reply.OutDate); err != nil {
		svc.WriteError(w, svc.Errorf(http.StatusBadRequest, "%v", err))
		return
	}
	var found SearchResult
	if err := f.search.Call(ctx, "/nearby", NearbyRequest{Lat: reply.Lat, Lon: reply.Lon, InDate: reply.InDate, OutDate: reply.OutDate}, &found); err != nil {
		svc.WriteError(w, err)
		return
	}
	var avail HotelIDs
	if err := f.reservation.Call(ctx, "/availability", AvailabilityRequest{
		HotelIDs: found.HotelIDs, InDate: reply.InDate, OutDate: reply.OutDate, RoomNumber: 1,
	}, &avail); err != nil {
		svc.WriteError(w, err)
		return
	}
	var profiles Profiles
	if err := f.profile.Call(ctx, "/profiles", ProfilesRequest{HotelIDs: avail.HotelIDs}, &profiles); err != nil {
		svc.WriteError(w, err)
		return
	}
	byID := map[string]Profile{}
	for _, p := range profiles.Hotels {
		byID[p.ID] = p
	}
	reply.Hotels = []HotelResult{}
	for _, plan := range found.RatePlans {
		if p, ok := byID[plan.HotelID]; ok {
			reply.Hotels = append(reply.Hotels, HotelResult{Profile: p, RatePlan: plan})
		}
	}
	svc.WriteJSON(w, http.StatusOK, reply)
}

func floatParam(v string) (float64, error) {
	if v == "" {
		return 0, nil
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, svc.Errorf(http.StatusBadRequest, "bad coordinate %q", v)
	}
	return x, nil
}

// ReservationRequest is the body of POST /reservation. Missing fields are
// chosen at random: a user (with their password), a hotel, a stay of 1 to 4
// nights in Year; the customer name defaults to the username and the
// number of rooms to 1.
type ReservationRequest struct {
	Username     string `json:"username"`
	Password     string `json:"password"`
	CustomerName string `json:"customer_name"`
	HotelID      string `json:"hotel_id"`
	InDate       string `json:"in_date"`
	OutDate      string `json:"out_date"`
	Number       int    `json:"number"`
}

// reserve logs the user in (user) and books the rooms (reservation): 401
// for a wrong password, 409 when the hotel is full on some night.
func (f *frontend) reserve(ctx context.Context, req *ReservationRequest) (*ReserveResult, error) {
	f.rnd.Do(func(rn *rand.Rand) {
		if req.Username == "" {
			u := f.users[rn.IntN(len(f.users))]
			req.Username, req.Password = u.Username, u.Password
		}
		if req.HotelID == "" {
			req.HotelID = strconv.Itoa(1 + rn.IntN(NumHotels))
		}
		if req.InDate == "" || req.OutDate == "" {
			req.InDate, req.OutDate = randomStay(rn)
		}
	})
	if req.CustomerName == "" {
		req.CustomerName = req.Username
	}
	if req.Number == 0 {
		req.Number = 1
	}
	var login LoginResult
	if err := f.user.Call(ctx, "/login", LoginRequest{Username: req.Username, Password: req.Password}, &login); err != nil {
		return nil, err
	}
	if !login.Correct {
		return nil, svc.Errorf(http.StatusUnauthorized, "wrong username or password")
	}
	var out ReserveResult
	err := f.reservation.Call(ctx, "/reserve", ReserveRequest{
		CustomerName: req.CustomerName, HotelID: req.HotelID, InDate: req.InDate, OutDate: req.OutDate, RoomNumber: req.Number,
	}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}
