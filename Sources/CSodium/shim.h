// Exposes libsodium (Argon2id, XChaCha20-Poly1305, sealed boxes) to Swift.
#include <sodium.h>
