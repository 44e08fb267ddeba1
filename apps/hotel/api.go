package hotel

// Messages of the internal HTTP/JSON API (POST, JSON bodies).

// NearbyRequest asks for the hotels nearest a point (geo) and, with dates,
// their prices (search).
type NearbyRequest struct {
	Lat     float64 `json:"lat"`
	Lon     float64 `json:"lon"`
	InDate  string  `json:"in_date,omitempty"`
	OutDate string  `json:"out_date,omitempty"`
}

// HotelIDs lists hotels.
type HotelIDs struct {
	HotelIDs []string `json:"hotel_ids"`
}

// RatesRequest asks for the rate plans of hotels for a stay.
type RatesRequest struct {
	HotelIDs []string `json:"hotel_ids"`
	InDate   string   `json:"in_date"`
	OutDate  string   `json:"out_date"`
}

// RatePlan is the price of a room type of a hotel for a stay.
type RatePlan struct {
	HotelID            string  `json:"hotel_id"`
	Code               string  `json:"code"`
	Description        string  `json:"description"`
	InDate             string  `json:"in_date"`
	OutDate            string  `json:"out_date"`
	BookableRate       float64 `json:"bookable_rate"`
	TotalRate          float64 `json:"total_rate"`
	TotalRateInclusive float64 `json:"total_rate_inclusive"`
}

// RatePlans lists rate plans, cheapest first.
type RatePlans struct {
	RatePlans []RatePlan `json:"rate_plans"`
}

// SearchResult lists hotels near a point, cheapest first, with the cheapest
// rate plan of each.
type SearchResult struct {
	HotelIDs  []string   `json:"hotel_ids"`
	RatePlans []RatePlan `json:"rate_plans"`
}

// AvailabilityRequest asks which of the hotels have RoomNumber rooms free on
// every night of a stay.
type AvailabilityRequest struct {
	CustomerName string   `json:"customer_name"`
	HotelIDs     []string `json:"hotel_ids"`
	InDate       string   `json:"in_date"`
	OutDate      string   `json:"out_date"`
	RoomNumber   int      `json:"room_number"`
}

// ReserveRequest books RoomNumber rooms of a hotel for a stay.
type ReserveRequest struct {
	CustomerName string `json:"customer_name"`
	HotelID      string `json:"hotel_id"`
	InDate       string `json:"in_date"`
	OutDate      string `json:"out_date"`
	RoomNumber   int    `json:"room_number"`
}

// ReserveResult confirms a booking.
type ReserveResult struct {
	ReservationID int64 `json:"reservation_id"`
	ReserveRequest
}

// ProfilesRequest asks for hotel profiles.
type ProfilesRequest struct {
	HotelIDs []string `json:"hotel_ids"`
}

// Profiles lists hotel profiles.
type Profiles struct {
	Hotels []Profile `json:"hotels"`
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
