package boutique

import (
	"fmt"
	"math"
)

const nanosPerUnit = 1_000_000_000

// Money is an amount in a currency, as units plus nanos (billionths of a
// unit) of the same sign, like google.type.Money.
type Money struct {
	CurrencyCode string `json:"currency_code"`
	Units        int64  `json:"units"`
	Nanos        int32  `json:"nanos"`
}

// MoneyFromNanos returns the amount of n billionths of a unit of code.
func MoneyFromNanos(code string, n int64) Money {
	return Money{CurrencyCode: code, Units: n / nanosPerUnit, Nanos: int32(n % nanosPerUnit)}
}

// TotalNanos returns the amount in billionths of a unit.
func (m Money) TotalNanos() int64 { return m.Units*nanosPerUnit + int64(m.Nanos) }

// Valid reports whether m has a currency and units and nanos agree in sign.
func (m Money) Valid() bool {
	if m.CurrencyCode == "" || m.Nanos <= -nanosPerUnit || m.Nanos >= nanosPerUnit {
		return false
	}
	return (m.Units >= 0 && m.Nanos >= 0) || (m.Units <= 0 && m.Nanos <= 0)
}

// Add returns m + o; both must be in the same currency.
func (m Money) Add(o Money) (Money, error) {
	if m.CurrencyCode != o.CurrencyCode {
		return Money{}, fmt.Errorf("adding %s to %s", o.CurrencyCode, m.CurrencyCode)
	}
	return MoneyFromNanos(m.CurrencyCode, m.TotalNanos()+o.TotalNanos()), nil
}

// Mul returns m × n.
func (m Money) Mul(n int64) Money {
	return MoneyFromNanos(m.CurrencyCode, m.TotalNanos()*n)
}

// String formats m as "EUR 12.34" (rounded to cents).
func (m Money) String() string {
	cents := math.Round(float64(m.TotalNanos()) / 1e7)
	return fmt.Sprintf("%s %.2f", m.CurrencyCode, cents/100)
}

// Convert converts m to the currency to with rates given per euro (the
// rate of EUR is 1), rounding to the nearest nano.
func Convert(rates map[string]float64, m Money, to string) (Money, error) {
	from, ok := rates[m.CurrencyCode]
	if !ok {
		return Money{}, fmt.Errorf("unsupported currency %q", m.CurrencyCode)
	}
	rate, ok := rates[to]
	if !ok {
		return Money{}, fmt.Errorf("unsupported currency %q", to)
	}
	if !m.Valid() {
		return Money{}, fmt.Errorf("invalid amount %+v", m)
	}
	n := math.Round(float64(m.TotalNanos()) / from * rate)
	return MoneyFromNanos(to, int64(n)), nil
}
