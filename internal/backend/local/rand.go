package local

import "crypto/rand"

var randRead = rand.Read
