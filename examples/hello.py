# A small real program: it runs in the Pyodide sandbox, so everything below is computed by CPython in WebAssembly.
import hashlib
import statistics
import sys

print(f"Python {sys.version.split()[0]} on {sys.platform}")

primes = [n for n in range(2, 60) if all(n % d for d in range(2, int(n ** 0.5) + 1))]
print("primes below 60:", primes)

samples = [2.5, 3.1, 4.7, 5.0, 6.2, 7.9]
print(f"mean {statistics.mean(samples):.3f}, stdev {statistics.stdev(samples):.3f}")

a, b = 0, 1
for _ in range(90):
    a, b = b, a + b
print("fib(90) =", a)

print("sha256('sandbox') starts with", hashlib.sha256(b"sandbox").hexdigest()[:16])
