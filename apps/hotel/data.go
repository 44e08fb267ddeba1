package hotel

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// Size of the generated data.
const (
	NumHotels = 100
	NumUsers  = 500
)

// The area the hotels are in (around San Francisco, as in the original
// benchmark) and the year searches and reservations are for.
const (
	CenterLat = 37.7749
	CenterLon = -122.4194
	SpanLat   = 0.25 // hotels lie within ±SpanLat of CenterLat
	SpanLon   = 0.30
	Year      = 2026
)

// DateLayout is the layout of dates in requests.
const DateLayout = "2006-01-02"

// Address is where a hotel is.
type Address struct {
	StreetNumber string  `json:"street_number"`
	StreetName   string  `json:"street_name"`
	City         string  `json:"city"`
	State        string  `json:"state"`
	Country      string  `json:"country"`
	PostalCode   string  `json:"postal_code"`
	Lat          float64 `json:"lat"`
	Lon          float64 `json:"lon"`
}

// Profile describes a hotel.
type Profile struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	PhoneNumber string  `json:"phone_number"`
	Description string  `json:"description"`
	Address     Address `json:"address"`
}

// RoomType is a kind of room and its nightly price.
type RoomType struct {
	Code         string  `json:"code"`
	Description  string  `json:"description"`
	BookableRate float64 `json:"bookable_rate"` // per night
}

// Hotel is a generated hotel: its profile, its capacity (rooms per night)
// and its room types.
type Hotel struct {
	Profile  Profile
	Capacity int
	Rooms    []RoomType
}

var (
	hotelWords  = []string{"Grand", "Bay", "Golden", "Harbor", "Union", "Park", "Mission", "Marina", "Hill", "Pacific", "Ocean", "Presidio", "Castro", "Nob", "Cable"}
	hotelKinds  = []string{"Hotel", "Inn", "Suites", "Lodge", "Resort", "House"}
	streetNames = []string{"Market St", "Mission St", "Geary Blvd", "Van Ness Ave", "Lombard St", "Castro St", "Valencia St", "California St", "Divisadero St", "Fillmore St"}
	roomTypes   = []RoomType{
		{Code: "KNG", Description: "King sized bed"},
		{Code: "QN", Description: "Queen sized bed"},
		{Code: "DBL", Description: "Two double beds"},
		{Code: "STE", Description: "Suite with a view"},
	}
)

// GenerateHotels returns the hotels generated from seed, with ids "1" to
// NumHotels.
func GenerateHotels(seed uint64) []Hotel {
	r := rand.New(rand.NewPCG(seed, 0x40_0001))
	hotels := make([]Hotel, NumHotels)
	for i := range hotels {
		id := strconv.Itoa(i + 1)
		name := fmt.Sprintf("%s %s %s", hotelWords[r.IntN(len(hotelWords))], hotelWords[r.IntN(len(hotelWords))], hotelKinds[r.IntN(len(hotelKinds))])
		h := Hotel{
			Profile: Profile{
				ID:          id,
				Name:        name,
				PhoneNumber: fmt.Sprintf("(415) %03d-%04d", 200+r.IntN(800), r.IntN(10000)),
				Address: Address{
					StreetNumber: strconv.Itoa(1 + r.IntN(3000)),
					StreetName:   streetNames[r.IntN(len(streetNames))],
					City:         "San Francisco",
					State:        "CA",
					Country:      "United States",
					PostalCode:   strconv.Itoa(94102 + r.IntN(40)),
					Lat:          round6(CenterLat + SpanLat*(2*r.Float64()-1)),
					Lon:          round6(CenterLon + SpanLon*(2*r.Float64()-1)),
				},
			},
			Capacity: 50 + r.IntN(251),
		}
		h.Profile.Description = fmt.Sprintf("%s: %d rooms, %s.", name, h.Capacity, []string{"close to the water", "in the heart of the city", "quiet and green", "with a rooftop bar"}[r.IntN(4)])
		base := 80 + 20*float64(r.IntN(16))
		for j, rt := range roomTypes[:2+r.IntN(3)] {
			rt.BookableRate = base * (1 + 0.35*float64(j))
			h.Rooms = append(h.Rooms, rt)
		}
		hotels[i] = h
	}
	return hotels
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// User is a registered user.
type User struct {
	Username string
	Password string // clear text, for the workload and tests
}

// GenerateUsers returns the users: user_<i> with password pw-<i>.
func GenerateUsers() []User {
	users := make([]User, NumUsers)
	for i := range users {
		users[i] = User{Username: fmt.Sprintf("user_%d", i), Password: fmt.Sprintf("pw-%d", i)}
	}
	return users
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

// ParseDates parses a stay: check-in and check-out dates, check-out after
// check-in and at most 30 nights later. It returns the first night as a day
// number (days since 1970-01-01) and the number of nights.
func ParseDates(in, out string) (first, nights int, err error) {
	ti, err := time.Parse(DateLayout, in)
	if err != nil {
		return 0, 0, fmt.Errorf("bad check-in date %q: want YYYY-MM-DD", in)
	}
	to, err := time.Parse(DateLayout, out)
	if err != nil {
		return 0, 0, fmt.Errorf("bad check-out date %q: want YYYY-MM-DD", out)
	}
	first = int(ti.Unix() / 86400)
	nights = int(to.Unix()/86400) - first
	if nights < 1 || nights > 30 {
		return 0, 0, fmt.Errorf("stay from %s to %s: want 1 to 30 nights", in, out)
	}
	return first, nights, nil
}

// DistanceKm is the great-circle distance between two points.
func DistanceKm(lat1, lon1, lat2, lon2 float64) float64 {
	const earthRadiusKm = 6371.0
	rad := math.Pi / 180
	dLat, dLon := (lat2-lat1)*rad, (lon2-lon1)*rad
	a := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * earthRadiusKm * math.Asin(math.Min(1, math.Sqrt(a)))
}
