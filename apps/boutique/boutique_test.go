package boutique_test

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/slowpoke-dev/slowpoke/apps/boutique"
	"github.com/slowpoke-dev/slowpoke/apps/internal/apptest"
)

const seed = 1

func TestSpec(t *testing.T) {
	apptest.CheckSpec(t, "app.yaml", boutique.App, "cart", map[string]float64{
		"home": 10, "set-currency": 10, "browse-product": 50, "add-to-cart": 10, "view-cart": 15, "checkout": 5,
	})
}

func TestDataDeterministic(t *testing.T) {
	a, b := boutique.GenerateCatalog(seed), boutique.GenerateCatalog(seed)
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed gave different catalogs")
	}
	if reflect.DeepEqual(a, boutique.GenerateCatalog(seed+1)) {
		t.Error("different seeds gave the same catalog")
	}
	if len(a) != boutique.NumProducts {
		t.Errorf("%d products, want %d", len(a), boutique.NumProducts)
	}
	ids := map[string]bool{}
	for _, p := range a {
		if ids[p.ID] || !p.PriceUSD.Valid() || p.PriceUSD.CurrencyCode != "USD" || p.PriceUSD.Units < 1 {
			t.Errorf("bad or repeated product %+v", p)
		}
		ids[p.ID] = true
	}
	r1, r2 := boutique.GenerateRates(seed), boutique.GenerateRates(seed)
	if !reflect.DeepEqual(r1, r2) {
		t.Error("same seed gave different rates")
	}
	if r1["EUR"] != 1 || r1["USD"] <= 0 || len(r1) < 10 {
		t.Errorf("rates %v", r1)
	}
}

func TestMoney(t *testing.T) {
	rates := map[string]float64{"EUR": 1, "USD": 1.25, "JPY": 125}
	for _, c := range []struct {
		in   boutique.Money
		to   string
		want boutique.Money
	}{
		{boutique.Money{CurrencyCode: "USD", Units: 10}, "EUR", boutique.Money{CurrencyCode: "EUR", Units: 8}},
		{boutique.Money{CurrencyCode: "EUR", Units: 1, Nanos: 500_000_000}, "JPY", boutique.Money{CurrencyCode: "JPY", Units: 187, Nanos: 500_000_000}},
		{boutique.Money{CurrencyCode: "USD", Units: 3, Nanos: 750_000_000}, "USD", boutique.Money{CurrencyCode: "USD", Units: 3, Nanos: 750_000_000}},
	} {
		got, err := boutique.Convert(rates, c.in, c.to)
		if err != nil || got != c.want {
			t.Errorf("Convert(%v, %s) = %v, %v; want %v", c.in, c.to, got, err, c.want)
		}
	}
	if _, err := boutique.Convert(rates, boutique.Money{CurrencyCode: "XXX", Units: 1}, "EUR"); err == nil {
		t.Error("converting from an unknown currency succeeded")
	}
	sum, _ := boutique.Money{CurrencyCode: "EUR", Units: 1, Nanos: 600_000_000}.Add(boutique.Money{CurrencyCode: "EUR", Units: 2, Nanos: 700_000_000})
	if want := (boutique.Money{CurrencyCode: "EUR", Units: 4, Nanos: 300_000_000}); sum != want {
		t.Errorf("sum %v, want %v", sum, want)
	}
}

func TestValidateCard(t *testing.T) {
	now := time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		card boutique.CreditCard
		ok   bool
	}{
		{boutique.DefaultCard, true},
		{boutique.CreditCard{Number: "5555 5555 5555 4444", ExpirationYear: 2030, ExpirationMonth: 6}, true},
		{boutique.CreditCard{Number: "4432-8015-6152-0455", ExpirationYear: 2039, ExpirationMonth: 1}, false}, // Luhn
		{boutique.CreditCard{Number: "378282246310005", ExpirationYear: 2039, ExpirationMonth: 1}, false},     // Amex
		{boutique.CreditCard{Number: "4432801561520454", ExpirationYear: 2030, ExpirationMonth: 5}, false},    // expired
	} {
		if err := boutique.ValidateCard(c.card, now); (err == nil) != c.ok {
			t.Errorf("ValidateCard(%+v) = %v, want ok %v", c.card, err, c.ok)
		}
	}
}

// TestShop drives every request type through the frontend.
func TestShop(t *testing.T) {
	c := apptest.Start(t, boutique.App, seed)
	base := c.URL("frontend")
	catalog := boutique.GenerateCatalog(seed)
	rates := boutique.GenerateRates(seed)
	byID := map[string]boutique.Product{}
	for _, p := range catalog {
		byID[p.ID] = p
	}

	t.Run("workload requests", func(t *testing.T) {
		s := apptest.LoadSpec(t, "app.yaml")
		apptest.SendAll(t, base, s, 3)
	})

	t.Run("home", func(t *testing.T) {
		var home boutique.HomePage
		apptest.GetJSON(t, base+"/?user_id=home-user&currency=JPY", &home)
		if len(home.Products) != boutique.NumProducts || !slices.Contains(home.Currencies, "EUR") || home.UserCurrency != "JPY" {
			t.Fatalf("home page %+v", home)
		}
		p := home.Products[0]
		want, _ := boutique.Convert(rates, byID[p.ID].PriceUSD, "JPY")
		if p.Price != want {
			t.Errorf("price of %s: %v, want %v", p.ID, p.Price, want)
		}
	})

	t.Run("set currency", func(t *testing.T) {
		code, body := apptest.Post(t, base+"/setCurrency", `{"currency_code":"GBP"}`)
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		if code, _ := apptest.Post(t, base+"/setCurrency", `{"currency_code":"XYZ"}`); code != http.StatusBadRequest {
			t.Errorf("unsupported currency: status %d, want 400", code)
		}
	})

	t.Run("product", func(t *testing.T) {
		p := catalog[3]
		var page boutique.ProductPage
		apptest.GetJSON(t, base+"/product/"+p.ID, &page)
		if page.Product.Name != p.Name || page.Price != p.PriceUSD {
			t.Errorf("product page %+v, want %+v", page, p)
		}
		if code, _ := apptest.Do(t, http.MethodGet, base+"/product/NOSUCHITEM", nil, ""); code != http.StatusNotFound {
			t.Errorf("unknown product: status %d, want 404", code)
		}
	})

	t.Run("add then view cart", func(t *testing.T) {
		user := "cart-user"
		apptest.PostJSON(t, base+"/cart", boutique.AddToCartRequest{UserID: user, ProductID: catalog[0].ID, Quantity: 2}, nil)
		apptest.PostJSON(t, base+"/cart", boutique.AddToCartRequest{UserID: user, ProductID: catalog[1].ID, Quantity: 1}, nil)
		apptest.PostJSON(t, base+"/cart", boutique.AddToCartRequest{UserID: user, ProductID: catalog[0].ID, Quantity: 1}, nil)
		var cart boutique.CartPage
		apptest.GetJSON(t, base+"/cart?user_id="+user, &cart)
		got := map[string]int32{}
		for _, it := range cart.Items {
			got[it.ProductID] = it.Quantity
		}
		if want := map[string]int32{catalog[0].ID: 3, catalog[1].ID: 1}; !reflect.DeepEqual(got, want) {
			t.Errorf("cart %v, want %v", got, want)
		}
		wantTotal := catalog[0].PriceUSD.Mul(3)
		wantTotal, _ = wantTotal.Add(catalog[1].PriceUSD)
		if cart.ItemsTotal != wantTotal {
			t.Errorf("items total %v, want %v", cart.ItemsTotal, wantTotal)
		}
		if len(cart.Recommendations) == 0 {
			t.Error("no recommendations")
		}
		for _, id := range cart.Recommendations {
			if _, inCart := got[id]; inCart {
				t.Errorf("recommended %s, which is in the cart", id)
			}
		}
	})

	t.Run("cart is bounded", func(t *testing.T) {
		user := "big-spender"
		for i := range boutique.MaxCartLines + 3 {
			apptest.PostJSON(t, base+"/cart", boutique.AddToCartRequest{UserID: user, ProductID: catalog[i].ID, Quantity: boutique.MaxQuantity}, nil)
		}
		apptest.PostJSON(t, base+"/cart", boutique.AddToCartRequest{UserID: user, ProductID: catalog[5].ID, Quantity: 4}, nil)
		var cart boutique.CartPage
		apptest.GetJSON(t, base+"/cart?user_id="+user, &cart)
		if len(cart.Items) != boutique.MaxCartLines || cart.Items[0].ProductID != catalog[3].ID {
			t.Errorf("cart of %d lines starting with %s, want %d starting with %s", len(cart.Items), cart.Items[0].ProductID, boutique.MaxCartLines, catalog[3].ID)
		}
		for _, it := range cart.Items {
			if it.Quantity > boutique.MaxQuantity {
				t.Errorf("quantity %d > %d", it.Quantity, boutique.MaxQuantity)
			}
		}
	})

	t.Run("checkout", func(t *testing.T) {
		for _, currency := range []string{"EUR", "USD", "JPY"} {
			t.Run(currency, func(t *testing.T) {
				user := "buyer-" + currency
				items := map[string]int32{catalog[2].ID: 2, catalog[7].ID: 1, catalog[11].ID: 3}
				for id, q := range items {
					apptest.PostJSON(t, base+"/cart", boutique.AddToCartRequest{UserID: user, ProductID: id, Quantity: q}, nil)
				}
				var order boutique.OrderResult
				apptest.PostJSON(t, base+"/cart/checkout", boutique.CheckoutRequest{UserID: user, Currency: currency}, &order)

				want := boutique.Money{CurrencyCode: currency}
				var units int64
				for id, q := range items {
					price, err := boutique.Convert(rates, byID[id].PriceUSD, currency)
					if err != nil {
						t.Fatal(err)
					}
					want, _ = want.Add(price.Mul(int64(q)))
					units += int64(q)
				}
				shipping, _ := boutique.Convert(rates, boutique.ShippingQuote(units), currency)
				want, _ = want.Add(shipping)
				if order.Total != want || order.ShippingCost != shipping {
					t.Errorf("total %v shipping %v, want %v and %v", order.Total, order.ShippingCost, want, shipping)
				}
				if len(order.Items) != len(items) || order.OrderID == "" || order.ShippingTrackingID == "" || order.TransactionID == "" {
					t.Errorf("order %+v", order)
				}
				var cart boutique.CartPage
				apptest.GetJSON(t, base+"/cart?user_id="+user, &cart)
				if len(cart.Items) != 0 {
					t.Errorf("cart not emptied: %+v", cart.Items)
				}
			})
		}
	})

	t.Run("checkout refused", func(t *testing.T) {
		user := "bad-card"
		apptest.PostJSON(t, base+"/cart", boutique.AddToCartRequest{UserID: user, ProductID: catalog[0].ID}, nil)
		req := boutique.CheckoutRequest{UserID: user, CreditCard: boutique.CreditCard{Number: "4432801561520455", ExpirationYear: 2099, ExpirationMonth: 1}}
		if code, body := apptest.Post(t, base+"/cart/checkout", req); code != http.StatusBadRequest {
			t.Errorf("invalid card: status %d (%s), want 400", code, body)
		}
		var cart boutique.CartPage
		apptest.GetJSON(t, base+"/cart?user_id="+user, &cart)
		if len(cart.Items) != 1 {
			t.Errorf("refused checkout changed the cart: %+v", cart.Items)
		}
	})
}

// TestConcurrentCarts adds to carts from many goroutines; run with -race.
func TestConcurrentCarts(t *testing.T) {
	c := apptest.Start(t, boutique.App, seed)
	base := c.URL("frontend")
	catalog := boutique.GenerateCatalog(seed)
	errc := make(chan error, 8)
	for g := range 8 {
		go func() {
			var err error
			for i := range 5 {
				body := fmt.Sprintf(`{"user_id":"shared","product_id":%q}`, catalog[g].ID)
				if err = apptest.Try(http.MethodPost, base+"/cart", body); err != nil {
					break
				}
				if err = apptest.Try(http.MethodGet, base+fmt.Sprintf("/cart?user_id=u%d", i), ""); err != nil {
					break
				}
			}
			errc <- err
		}()
	}
	for range 8 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	var cart boutique.CartPage
	apptest.GetJSON(t, base+"/cart?user_id=shared", &cart)
	if len(cart.Items) != 8 {
		t.Fatalf("%d lines, want 8", len(cart.Items))
	}
	for _, it := range cart.Items {
		if it.Quantity != 5 {
			t.Errorf("%s: quantity %d, want 5", it.ProductID, it.Quantity)
		}
	}
}
