package boutique

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/slowpoke-dev/slowpoke/apps/internal/svc"
)

// Cookies the front end reads and sets.
const (
	userCookie     = "shop_user"
	currencyCookie = "shop_currency"
)

type frontend struct {
	cart            *CartClient
	catalog         *ProductCatalogClient
	currency        *CurrencyClient
	checkout        *CheckoutClient
	recommendations *RecommendationClient

	productIDs []string
	rnd        *svc.Rand
}

func newFrontend(cfg svc.Config) (svc.Server, error) {
	var d dialer
	f := &frontend{rnd: svc.NewRand(cfg.Seed, 0xb0_0f00)}
	for _, p := range GenerateCatalog(cfg.Seed) {
		f.productIDs = append(f.productIDs, p.ID)
	}
	conns, err := d.dialAll(cfg, "cart", "productcatalog", "currency", "checkout", "recommendations")
	if err != nil {
		return nil, err
	}
	f.cart = NewCartClient(conns["cart"])
	f.catalog = NewProductCatalogClient(conns["productcatalog"])
	f.currency = NewCurrencyClient(conns["currency"])
	f.checkout = NewCheckoutClient(conns["checkout"])
	f.recommendations = NewRecommendationClient(conns["recommendations"])

	m := svc.NewMux(cfg.PerCall())
	m.HandleFunc("GET /{$}", f.home)
	m.HandleFunc("POST /setCurrency", f.setCurrency)
	m.HandleFunc("GET /product", f.product)
	m.HandleFunc("GET /product/{id}", f.product)
	m.HandleFunc("POST /cart", f.addToCart)
	m.HandleFunc("GET /cart", f.viewCart)
	m.HandleFunc("POST /cart/empty", f.emptyCart)
	m.HandleFunc("POST /cart/checkout", f.placeOrder)
	return svc.NewHTTPServer(m, d.close), nil
}

// fail writes err, mapping gRPC statuses to HTTP ones.
func fail(w http.ResponseWriter, err error) { svc.WriteError(w, svc.HTTPStatusFromGRPC(err)) }

// user returns the user a request is for: the explicit one, else the
// session cookie, else a random one of the generated shoppers.
func (f *frontend) user(r *http.Request, explicit string) string {
	if explicit != "" {
		return explicit
	}
	if v := r.URL.Query().Get("user_id"); v != "" {
		return v
	}
	if c, err := r.Cookie(userCookie); err == nil && c.Value != "" {
		return c.Value
	}
	return UserID(f.rnd.IntN(NumUsers))
}

// currencyOf returns the user's currency: the explicit one, else the query,
// else the cookie, else USD.
func currencyOf(r *http.Request, explicit string) string {
	if explicit != "" {
		return explicit
	}
	if v := r.URL.Query().Get("currency"); v != "" {
		return v
	}
	if c, err := r.Cookie(currencyCookie); err == nil && c.Value != "" {
		return c.Value
	}
	return "USD"
}

// convert returns m in currency, asking the currency service unless m is in
// it already.
func (f *frontend) convert(ctx context.Context, m Money, currency string) (Money, error) {
	if m.CurrencyCode == currency {
		return m, nil
	}
	out, err := f.currency.Convert(ctx, &CurrencyConversionRequest{From: m, ToCode: currency})
	if err != nil {
		return Money{}, err
	}
	return *out, nil
}

// ProductView is a product priced in the user's currency.
type ProductView struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Picture string `json:"picture"`
	Price   Money  `json:"price"`
}

// HomePage is the reply to GET /.
type HomePage struct {
	UserID       string        `json:"user_id"`
	UserCurrency string        `json:"user_currency"`
	Currencies   []string      `json:"currencies"`
	CartSize     int           `json:"cart_size"`
	Products     []ProductView `json:"products"`
}

func (f *frontend) home(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	user, currency := f.user(r, ""), currencyOf(r, "")
	currencies, err := f.currency.GetSupportedCurrencies(ctx, &Empty{})
	if err != nil {
		fail(w, err)
		return
	}
	products, err := f.catalog.ListProducts(ctx, &Empty{})
	if err != nil {
		fail(w, err)
		return
	}
	cart, err := f.cart.GetCart(ctx, &GetCartRequest{UserID: user})
	if err != nil {
		fail(w, err)
		return
	}
	page := HomePage{UserID: user, UserCurrency: currency, Currencies: currencies.CurrencyCodes}
	for _, it := range cart.Items {
		page.CartSize += int(it.Quantity)
	}
	for _, p := range products.Products {
		price, err := f.convert(ctx, p.PriceUSD, currency)
		if err != nil {
			fail(w, err)
			return
		}
		page.Products = append(page.Products, ProductView{ID: p.ID, Name: p.Name, Picture: p.Picture, Price: price})
	}
	svc.WriteJSON(w, http.StatusOK, page)
}

// SetCurrencyRequest is the body of POST /setCurrency; without a code a
// random supported currency is chosen.
type SetCurrencyRequest struct {
	CurrencyCode string `json:"currency_code"`
}

func (f *frontend) setCurrency(w http.ResponseWriter, r *http.Request) {
	var req SetCurrencyRequest
	if err := svc.ReadJSON(r, &req); err != nil {
		svc.WriteError(w, err)
		return
	}
	if req.CurrencyCode == "" {
		req.CurrencyCode = r.URL.Query().Get("currency_code")
	}
	supported, err := f.currency.GetSupportedCurrencies(r.Context(), &Empty{})
	if err != nil {
		fail(w, err)
		return
	}
	codes := supported.CurrencyCodes
	if req.CurrencyCode == "" && len(codes) > 0 {
		req.CurrencyCode = codes[f.rnd.IntN(len(codes))]
	}
	if !slices.Contains(codes, req.CurrencyCode) {
		svc.WriteError(w, svc.Errorf(http.StatusBadRequest, "unsupported currency %q", req.CurrencyCode))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: currencyCookie, Value: req.CurrencyCode, Path: "/", MaxAge: 48 * 3600})
	svc.WriteJSON(w, http.StatusOK, map[string]string{"user_currency": req.CurrencyCode})
}

// ProductPage is the reply to GET /product/{id}.
type ProductPage struct {
	Product Product `json:"product"`
	Price   Money   `json:"price"`
}

func (f *frontend) product(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" {
		id = f.productIDs[f.rnd.IntN(len(f.productIDs))]
	}
	p, err := f.catalog.GetProduct(r.Context(), &GetProductRequest{ID: id})
	if err != nil {
		fail(w, err)
		return
	}
	price, err := f.convert(r.Context(), p.PriceUSD, currencyOf(r, ""))
	if err != nil {
		fail(w, err)
		return
	}
	svc.WriteJSON(w, http.StatusOK, ProductPage{Product: *p, Price: price})
}

// AddToCartRequest is the body of POST /cart; missing fields are filled with
// a random user, a random product and a quantity of 1.
type AddToCartRequest struct {
	UserID    string `json:"user_id"`
	ProductID string `json:"product_id"`
	Quantity  int32  `json:"quantity"`
}

func (f *frontend) addToCart(w http.ResponseWriter, r *http.Request) {
	var req AddToCartRequest
	if err := svc.ReadJSON(r, &req); err != nil {
		svc.WriteError(w, err)
		return
	}
	req.UserID = f.user(r, req.UserID)
	if req.ProductID == "" {
		req.ProductID = f.productIDs[f.rnd.IntN(len(f.productIDs))]
	} else if !slices.Contains(f.productIDs, req.ProductID) {
		svc.WriteError(w, svc.Errorf(http.StatusNotFound, "no product with id %q", req.ProductID))
		return
	}
	if req.Quantity == 0 {
		req.Quantity = 1
	}
	if req.Quantity < 0 || req.Quantity > MaxQuantity {
		svc.WriteError(w, svc.Errorf(http.StatusBadRequest, "quantity must be between 1 and %d", MaxQuantity))
		return
	}
	_, err := f.cart.AddItem(r.Context(), &AddItemRequest{UserID: req.UserID, Item: CartItem{ProductID: req.ProductID, Quantity: req.Quantity}})
	if err != nil {
		fail(w, err)
		return
	}
	svc.WriteJSON(w, http.StatusOK, req)
}

// CartLine is a line of the cart page.
type CartLine struct {
	ProductID string `json:"product_id"`
	Name      string `json:"name"`
	Quantity  int32  `json:"quantity"`
	Price     Money  `json:"price"`
	LineTotal Money  `json:"line_total"`
}

// CartPage is the reply to GET /cart.
type CartPage struct {
	UserID          string     `json:"user_id"`
	UserCurrency    string     `json:"user_currency"`
	Items           []CartLine `json:"items"`
	ItemsTotal      Money      `json:"items_total"`
	Recommendations []string   `json:"recommendations"`
}

func (f *frontend) viewCart(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	user, currency := f.user(r, ""), currencyOf(r, "")
	cart, err := f.cart.GetCart(ctx, &GetCartRequest{UserID: user})
	if err != nil {
		fail(w, err)
		return
	}
	page := CartPage{UserID: user, UserCurrency: currency, Items: []CartLine{}, ItemsTotal: Money{CurrencyCode: currency}}
	ids := make([]string, 0, len(cart.Items))
	for _, it := range cart.Items {
		ids = append(ids, it.ProductID)
		p, err := f.catalog.GetProduct(ctx, &GetProductRequest{ID: it.ProductID})
		if err != nil {
			fail(w, err)
			return
		}
		price, err := f.convert(ctx, p.PriceUSD, currency)
		if err != nil {
			fail(w, err)
			return
		}
		line := CartLine{ProductID: p.ID, Name: p.Name, Quantity: it.Quantity, Price: price, LineTotal: price.Mul(int64(it.Quantity))}
		page.Items = append(page.Items, line)
		if page.ItemsTotal, err = page.ItemsTotal.Add(line.LineTotal); err != nil {
			fail(w, err)
			return
		}
	}
	rec, err := f.recommendations.ListRecommendations(ctx, &ListRecommendationsRequest{UserID: user, ProductIDs: ids})
	if err != nil {
		fail(w, err)
		return
	}
	page.Recommendations = rec.ProductIDs
	svc.WriteJSON(w, http.StatusOK, page)
}

func (f *frontend) emptyCart(w http.ResponseWriter, r *http.Request) {
	var req struct {
		UserID string `json:"user_id"`
	}
	if err := svc.ReadJSON(r, &req); err != nil {
		svc.WriteError(w, err)
		return
	}
	req.UserID = f.user(r, req.UserID)
	if _, err := f.cart.EmptyCart(r.Context(), &EmptyCartRequest{UserID: req.UserID}); err != nil {
		fail(w, err)
		return
	}
	svc.WriteJSON(w, http.StatusOK, req)
}

// CheckoutRequest is the body of POST /cart/checkout. Missing fields are
// filled in: a random user, the session currency (else USD), the user's
// example.com address and the sample address and card of the original
// shop's form.
type CheckoutRequest struct {
	UserID   string `json:"user_id"`
	Currency string `json:"currency"`
	Email    string `json:"email"`
	Address
	CreditCard
}

func (f *frontend) placeOrder(w http.ResponseWriter, r *http.Request) {
	var req CheckoutRequest
	if err := svc.ReadJSON(r, &req); err != nil {
		svc.WriteError(w, err)
		return
	}
	req.UserID = f.user(r, req.UserID)
	req.Currency = currencyOf(r, req.Currency)
	if req.Email == "" {
		req.Email = fmt.Sprintf("%s@example.com", req.UserID)
	}
	if req.Address == (Address{}) {
		req.Address = DefaultAddress
	}
	if req.CreditCard == (CreditCard{}) {
		req.CreditCard = DefaultCard
	}
	resp, err := f.checkout.PlaceOrder(r.Context(), &PlaceOrderRequest{
		UserID:       req.UserID,
		UserCurrency: req.Currency,
		Address:      req.Address,
		Email:        req.Email,
		CreditCard:   req.CreditCard,
	})
	if err != nil {
		fail(w, err)
		return
	}
	svc.WriteJSON(w, http.StatusOK, resp.Order)
}
