package hotel

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

// ---- geo ----

// Nearest hotels geo returns: at most NearbyCount, within MaxDistanceKm.
const (
	NearbyCount   = 5
	MaxDistanceKm = 10
)

type geo struct {
	points []Address
	ids    []string
}

func newGeo(seed uint64) *geo {
	g := &geo{}
	for _, h := range GenerateHotels(seed) {
		g.points = append(g.points, h.Profile.Address)
		g.ids = append(g.ids, h.Profile.ID)
	}
	return g
}

func (g *geo) register(m *svc.Mux) { m.HandleFunc("POST /nearby", svc.JSON(g.nearby)) }

// nearby returns the hotels within MaxDistanceKm of the point, nearest
// first, at most NearbyCount.
func (g *geo) nearby(_ context.Context, req *NearbyRequest) (*HotelIDs, error) {
	if math.Abs(req.Lat) > 90 || math.Abs(req.Lon) > 180 {
		return nil, svc.Errorf(http.StatusBadRequest, "bad point (%g, %g)", req.Lat, req.Lon)
	}
	type hit struct {
		i int
		d float64
	}
	var hits []hit
	for i, p := range g.points {
		if d := DistanceKm(req.Lat, req.Lon, p.Lat, p.Lon); d <= MaxDistanceKm {
			hits = append(hits, hit{i, d})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Compare(a.d, b.d) })
	out := &HotelIDs{HotelIDs: []string{}}
	for _, h := range hits[:min(len(hits), NearbyCount)] {
		out.HotelIDs = append(out.HotelIDs, g.ids[h.i])
	}
	return out, nil
}

// ---- rate ----

// TaxRate is added to the total rate to give the inclusive one.
const TaxRate = 0.14

// StayPrice is the price of a stay of nights starting on day first (days
// since 1970-01-01) in a room of nightly rate: Friday and Saturday nights
// cost 20% more, nights of June to August 15% more.
func StayPrice(rate float64, first, nights int) float64 {
	var total float64
	for d := first; d < first+nights; d++ {
		t := time.Unix(int64(d)*86400, 0).UTC()
		f := 1.0
		if wd := t.Weekday(); wd == time.Friday || wd == time.Saturday {
			f *= 1.2
		}
		if m := t.Month(); m >= time.June && m <= time.August {
			f *= 1.15
		}
		total += rate * f
	}
	return math.Round(total*100) / 100
}

type rate struct {
	rooms map[string][]RoomType
}

func newRate(seed uint64) *rate {
	r := &rate{rooms: map[string][]RoomType{}}
	for _, h := range GenerateHotels(seed) {
		r.rooms[h.Profile.ID] = h.Rooms
	}
	return r
}

func (r *rate) register(m *svc.Mux) { m.HandleFunc("POST /rates", svc.JSON(r.rates)) }

func (r *rate) rates(_ context.Context, req *RatesRequest) (*RatePlans, error) {
	first, nights, err := ParseDates(req.InDate, req.OutDate)
	if err != nil {
		return nil, svc.Errorf(http.StatusBadRequest, "%v", err)
	}
	out := &RatePlans{RatePlans: []RatePlan{}}
	for _, id := range req.HotelIDs {
		for _, rt := range r.rooms[id] {
			total := StayPrice(rt.BookableRate, first, nights)
			out.RatePlans = append(out.RatePlans, RatePlan{
				HotelID: id, Code: rt.Code, Description: rt.Description,
				InDate: req.InDate, OutDate: req.OutDate,
				BookableRate: rt.BookableRate, TotalRate: total,
				TotalRateInclusive: math.Round(total*(1+TaxRate)*100) / 100,
			})
		}
	}
	slices.SortStableFunc(out.RatePlans, func(a, b RatePlan) int { return cmp.Compare(a.TotalRate, b.TotalRate) })
	return out, nil
}

// ---- search ----

type search struct {
	geo, rate *svc.Client
}

func newSearch(client func(string) *svc.Client) *search {
	return &search{geo: client("geo"), rate: client("rate")}
}

func (s *search) register(m *svc.Mux) { m.HandleFunc("POST /nearby", svc.JSON(s.nearby)) }

// nearby returns the hotels near the point, cheapest first for the dates.
func (s *search) nearby(ctx context.Context, req *NearbyRequest) (*SearchResult, error) {
	var near HotelIDs
	if err := s.geo.Call(ctx, "/nearby", NearbyRequest{Lat: req.Lat, Lon: req.Lon}, &near); err != nil {
		return nil, err
	}
	var plans RatePlans
	if err := s.rate.Call(ctx, "/rates", RatesRequest{HotelIDs: near.HotelIDs, InDate: req.InDate, OutDate: req.OutDate}, &plans); err != nil {
		return nil, err
	}
	out := &SearchResult{HotelIDs: []string{}, RatePlans: []RatePlan{}}
	seen := map[string]bool{}
	for _, p := range plans.RatePlans {
		if !seen[p.HotelID] {
			seen[p.HotelID] = true
			out.HotelIDs = append(out.HotelIDs, p.HotelID)
			out.RatePlans = append(out.RatePlans, p)
		}
	}
	return out, nil
}

// ---- profile ----

type profile struct {
	byID map[string]Profile
}

func newProfile(seed uint64) *profile {
	p := &profile{byID: map[string]Profile{}}
	for _, h := range GenerateHotels(seed) {
		p.byID[h.Profile.ID] = h.Profile
	}
	return p
}

func (p *profile) register(m *svc.Mux) { m.HandleFunc("POST /profiles", svc.JSON(p.profiles)) }

func (p *profile) profiles(_ context.Context, req *ProfilesRequest) (*Profiles, error) {
	out := &Profiles{Hotels: make([]Profile, 0, len(req.HotelIDs))}
	for _, id := range req.HotelIDs {
		if pr, ok := p.byID[id]; ok {
			out.Hotels = append(out.Hotels, pr)
		}
	}
	return out, nil
}

// ---- reservation ----

// MaxRooms is the most rooms one reservation may book.
const MaxRooms = 500

type hotelBook struct {
	mu       sync.Mutex
	capacity int
	booked   map[int]int // rooms booked per night (day number)
}

type reservation struct {
	hotels map[string]*hotelBook
	nextID atomic.Int64
}

func newReservation(seed uint64) *reservation {
	r := &reservation{hotels: map[string]*hotelBook{}}
	for _, h := range GenerateHotels(seed) {
		r.hotels[h.Profile.ID] = &hotelBook{capacity: h.Capacity, booked: map[int]int{}}
	}
	return r
}

func (r *reservation) register(m *svc.Mux) {
	m.HandleFunc("POST /availability", svc.JSON(r.availability))
	m.HandleFunc("POST /reserve", svc.JSON(r.reserve))
}

func checkRooms(n int) error {
	if n < 1 || n > MaxRooms {
		return svc.Errorf(http.StatusBadRequest, "room number %d: want 1 to %d", n, MaxRooms)
	}
	return nil
}

// free reports whether n rooms are free on every night; b.mu must be held.
func (b *hotelBook) free(first, nights, n int) bool {
	for d := first; d < first+nights; d++ {
		if b.booked[d]+n > b.capacity {
			return false
		}
	}
	return true
}

func (r *reservation) availability(_ context.Context, req *AvailabilityRequest) (*HotelIDs, error) {
	first, nights, err := ParseDates(req.InDate, req.OutDate)
	if err != nil {
		return nil, svc.Errorf(http.StatusBadRequest, "%v", err)
	}
	if err := checkRooms(req.RoomNumber); err != nil {
		return nil, err
	}
	out := &HotelIDs{HotelIDs: []string{}}
	for _, id := range req.HotelIDs {
		b, ok := r.hotels[id]
		if !ok {
			continue
		}
		b.mu.Lock()
		ok = b.free(first, nights, req.RoomNumber)
		b.mu.Unlock()
		if ok {
			out.HotelIDs = append(out.HotelIDs, id)
		}
	}
	return out, nil
}

// reserve books the rooms if every night has them free, atomically; it
// refuses with 409 Conflict otherwise.
func (r *reservation) reserve(_ context.Context, req *ReserveRequest) (*ReserveResult, error) {
	first, nights, err := ParseDates(req.InDate, req.OutDate)
	if err != nil {
		return nil, svc.Errorf(http.StatusBadRequest, "%v", err)
	}
	if err := checkRooms(req.RoomNumber); err != nil {
		return nil, err
	}
	if req.CustomerName == "" {
		return nil, svc.Errorf(http.StatusBadRequest, "no customer name")
	}
	b, ok := r.hotels[req.HotelID]
	if !ok {
		return nil, svc.Errorf(http.StatusNotFound, "no hotel %q", req.HotelID)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.free(first, nights, req.RoomNumber) {
		return nil, svc.Errorf(http.StatusConflict, "hotel %s has no %d rooms free on every night from %s to %s", req.HotelID, req.RoomNumber, req.InDate, req.OutDate)
	}
	for d := first; d < first+nights; d++ {
		b.booked[d] += req.RoomNumber
	}
	return &ReserveResult{ReservationID: r.nextID.Add(1), ReserveRequest: *req}, nil
}

// ---- user ----

type userService struct {
	salt   string
	hashes map[string]string
}

func newUserService(seed uint64) *userService {
	u := &userService{salt: fmt.Sprintf("salt-%d-", seed), hashes: map[string]string{}}
	for _, usr := range GenerateUsers() {
		u.hashes[usr.Username] = passwordHash(u.salt, usr.Password)
	}
	return u
}

func (u *userService) register(m *svc.Mux) { m.HandleFunc("POST /login", svc.JSON(u.login)) }

func (u *userService) login(_ context.Context, req *LoginRequest) (*LoginResult, error) {
	want, ok := u.hashes[req.Username]
	got := passwordHash(u.salt, req.Password)
	return &LoginResult{Correct: ok && got == want}, nil
}
