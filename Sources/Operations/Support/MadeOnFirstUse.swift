// Side storage made on first use: most operations and queues never need it, so it stays
// nil (or absent) until the first caller that does.

extension Optional {
    /// The wrapped value; when there is none, the one `make` returns, stored first.
    @inline(__always)
    mutating func madeOnFirstUse(_ make: () -> Wrapped) -> Wrapped {
        if let self { return self }
        let made = make()
        self = made
        return made
    }
}

extension Dictionary where Key == ObjectIdentifier, Value == AnyObject {
    /// The value of type `T` kept here (one per type, for the layers above an operation or
    /// a queue), made by `make` on first use.
    mutating func layerValue<T: AnyObject>(madeBy make: () -> T) -> T {
        let key = ObjectIdentifier(T.self)
        if let value = self[key] as? T { return value }
        let value = make()
        self[key] = value
        return value
    }
}
