package boutique

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// The catalog, currency rates, users and defaults of the shop, generated
// deterministically from the seed.

// NumProducts is the size of the generated catalog.
const NumProducts = 30

// NumUsers is the number of shoppers the front end picks from when a request
// names none.
const NumUsers = 200

// Product is an item of the catalog. Prices are in US dollars.
type Product struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Picture     string   `json:"picture"`
	PriceUSD    Money    `json:"price_usd"`
	Categories  []string `json:"categories"`
}

var (
	adjectives = []string{"Vintage", "Classic", "Modern", "Rustic", "Handmade", "Compact", "Deluxe", "Minimal",
		"Bamboo", "Copper", "Ceramic", "Leather", "Wool", "Glass", "Walnut", "Linen", "Solar", "Retro"}
	nouns = []string{"Typewriter", "Sunglasses", "Tank Top", "Watch", "Loafers", "Hairdryer", "Candle Holder",
		"Salt & Pepper Shakers", "Mug", "Backpack", "Lamp", "Notebook", "Kettle", "Scarf", "Headphones",
		"Bicycle Bell", "Plant Pot", "Camera Strap", "Teapot", "Umbrella"}
	categories = []string{"accessories", "clothing", "footwear", "hair", "beauty", "decor", "home", "kitchen", "vintage", "garden"}
	features   = []string{"built to last", "a customer favourite", "light and sturdy", "made in small batches",
		"easy to clean", "a perfect gift", "sustainably sourced", "designed in-house"}
)

// GenerateCatalog returns the catalog generated from seed: NumProducts
// products with distinct ids and names.
func GenerateCatalog(seed uint64) []Product {
	r := rand.New(rand.NewPCG(seed, 0xb0_0001))
	seenID := map[string]bool{}
	seenName := map[string]bool{}
	products := make([]Product, 0, NumProducts)
	for len(products) < NumProducts {
		id := randomID(r, 10)
		name := adjectives[r.IntN(len(adjectives))] + " " + nouns[r.IntN(len(nouns))]
		if seenID[id] || seenName[name] {
			continue
		}
		seenID[id], seenName[name] = true, true
		cats := []string{categories[r.IntN(len(categories))]}
		if c := categories[r.IntN(len(categories))]; c != cats[0] && r.IntN(2) == 0 {
			cats = append(cats, c)
		}
		price := Money{CurrencyCode: "USD", Units: int64(2 + r.IntN(200)), Nanos: int32(r.IntN(100)) * 10_000_000}
		products = append(products, Product{
			ID:          id,
			Name:        name,
			Description: fmt.Sprintf("%s: %s, %s.", name, features[r.IntN(len(features))], features[r.IntN(len(features))]),
			Picture:     "/static/img/products/" + strings.ToLower(strings.NewReplacer(" ", "-", "&", "and").Replace(name)) + ".jpg",
			PriceUSD:    price,
			Categories:  cats,
		})
	}
	return products
}

func randomID(r *rand.Rand, n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// baseRates are approximate units per euro; GenerateRates jitters them.
var baseRates = []struct {
	code string
	rate float64
}{
	{"EUR", 1}, {"USD", 1.13}, {"JPY", 126.4}, {"GBP", 0.86}, {"CHF", 1.06}, {"CAD", 1.51},
	{"AUD", 1.61}, {"SEK", 10.9}, {"NOK", 11.6}, {"DKK", 7.46}, {"PLN", 4.29}, {"CZK", 25.4},
	{"HUF", 395.2}, {"TRY", 36.8}, {"BRL", 6.21}, {"INR", 94.3}, {"CNY", 8.11}, {"KRW", 1520.7},
	{"MXN", 21.9}, {"ZAR", 20.3}, {"SGD", 1.49}, {"HKD", 8.82}, {"NZD", 1.79}, {"ILS", 4.15},
}

// GenerateRates returns the currency rates generated from seed, as units of
// each currency per euro (EUR is exactly 1), rounded to 4 significant digits.
func GenerateRates(seed uint64) map[string]float64 {
	r := rand.New(rand.NewPCG(seed, 0xb0_0002))
	rates := make(map[string]float64, len(baseRates))
	for _, b := range baseRates {
		if b.code == "EUR" {
			rates["EUR"] = 1
			continue
		}
		v := b.rate * (0.95 + 0.1*r.Float64())
		digits := 3 - math.Floor(math.Log10(v))
		p := math.Pow(10, digits)
		rates[b.code] = math.Round(v*p) / p
	}
	return rates
}

// UserID returns the id of the i-th generated shopper.
func UserID(i int) string { return fmt.Sprintf("user-%03d", i) }

// Defaults the front end fills in when a checkout names no address, e-mail
// or card: the sample values of the original shop's form.
var (
	DefaultAddress = Address{StreetAddress: "1600 Amphitheatre Parkway", City: "Mountain View", State: "CA", Country: "United States", ZipCode: 94043}
	DefaultCard    = CreditCard{Number: "4432-8015-6152-0454", CVV: 672, ExpirationYear: 2039, ExpirationMonth: 1}
)
