// The gate that holds an operation's exclusivity categories.

@_spi(Engine) import Operations

/// Asks for an operation's categories once its dependencies have finished and its
/// conditions hold, and admits it when all are granted; gives them back when it finishes
/// (or when it is cancelled, or gains a dependency, before it started).
///
/// - Note: `@unchecked Sendable`: its state is in a `Locked`.
final class ExclusivityGate: ExplainedGate, @unchecked Sendable {
    private struct State {
        /// Exclusive wins over shared for the same category.
        var categories: [String: ExclusivityMode] = [:]
        /// The request of a round that asked and was not released yet (inline: there is
        /// seldom more than one), and any others.
        var request: (round: UInt32, id: UInt64)?
        var otherRequests: [(round: UInt32, id: UInt64)] = []
        /// Rounds released before their request was made.
        var releasedEarly: Set<UInt32> = []

        mutating func remember(_ id: UInt64, round: UInt32) {
            if request == nil { request = (round, id) } else { otherRequests.append((round, id)) }
        }

        /// The request of `round`, forgotten.
        mutating func takeRequest(of round: UInt32) -> UInt64? {
            if let request, request.round == round {
                self.request = otherRequests.popLast()
                return request.id
            }
            guard let index = otherRequests.firstIndex(where: { $0.round == round }) else { return nil }
            return otherRequests.remove(at: index).id
        }
    }

    private let state = Locked(State())

    /// After the conditions: a granted category is never held by an operation that still
    /// waits for a condition.
    var rank: Int { 1 }

    func append(_ category: String, mode: ExclusivityMode) {
        state.withLock { state in
            if state.categories[category] != .exclusive { state.categories[category] = mode }
        }
    }

    /// The categories the operation holds while it runs.
    var categories: [String: ExclusivityMode] { state.withLock { $0.categories } }

    func consult(_ pass: GatePass) {
        let guarded = pass.operation
        guard let (needs, insideHolder) = _needs(for: guarded) else { return }
        let (id, granted) = ExclusivityManager.request(needs, insideHolder: insideHolder, grant: pass)
        let releaseNow = state.withLock { state -> Bool in
            if state.releasedEarly.remove(pass.round) != nil { return true }
            state.remember(id, round: pass.round)
            return false
        }
        if releaseNow {
            // Released while it asked: its own grant is void; others granted stay granted.
            for grant in granted where grant.operation !== guarded || grant.round != pass.round { grant.admit() }
            ExclusivityManager.release(id)
        } else {
            for grant in granted { grant.admit() }
        }
    }

    func release(_ pass: GatePass, because reason: GateRelease) {
        let id = state.withLock { state -> UInt64? in
            guard let id = state.takeRequest(of: pass.round) else {
                state.releasedEarly.insert(pass.round)
                return nil
            }
            return id
        }
        if let id { ExclusivityManager.release(id) }
    }

    /// The ids of the requests made and not released.
    var _requestIDs: [UInt64] {
        state.withLock { state in (state.request.map { [$0.id] } ?? []) + state.otherRequests.map(\.id) }
    }

    func gateWait(for operation: Operation) -> Operation.GateWait {
        .exclusivity(state.withLock { $0.categories.keys.sorted() })
    }

    /// What to ask for: each category keyed by the owner holding it, if one does.
    ///
    /// A category that an owner of the operation's queue holds (its group, or its retry, at
    /// any level up) is asked for inside that owner's scope: the owner's children contend
    /// for it among themselves, not with the owner, which holds it until they have
    /// finished. Exclusive access inside an owner that only shares the category could never
    /// be granted: the operation is cancelled with an ``ExclusivityError`` (nil returned).
    private func _needs(for guarded: Operation) -> ([(category: String, mode: ExclusivityMode)], Bool)? {
        let exclusivity = categories
        let holders = Self._holdingOwners(above: guarded)
        var needs: [(category: String, mode: ExclusivityMode)] = []
        for (category, mode) in exclusivity {
            guard let (owner, held) = holders.lazy.compactMap({ owner, categories in categories[category].map { (owner, $0) } }).first else {
                needs.append((category, mode))
                continue
            }
            if held == .shared, mode == .exclusive {
                guarded.cancel(with: ExclusivityError(category: category, operation: guarded._misuseName, owner: owner._misuseName))
                return nil
            }
            needs.append(("\(category)\u{1F}\(UInt(bitPattern: ObjectIdentifier(owner).hashValue))", mode))
        }
        needs.sort { $0.category < $1.category }
        // Inside an owner that holds categories, requests waiting in line may be waiting
        // for that owner, which waits for this operation: it does not queue behind them.
        return (needs, !holders.isEmpty)
    }

    /// The owners of the queues above `operation` (its group, the group's group…, or a
    /// retry) that hold categories, nearest first, with their categories.
    private static func _holdingOwners(above operation: Operation) -> [(Operation, [String: ExclusivityMode])] {
        var holders: [(Operation, [String: ExclusivityMode])] = []
        var queue = operation._queue
        while let owned = queue as? OwnedOperationQueue, let owner = owned.owner {
            if let gate = owner._gates.lazy.compactMap({ $0 as? ExclusivityGate }).first {
                let held = gate.categories
                if !held.isEmpty { holders.append((owner, held)) }
            }
            queue = owner._queue
        }
        return holders
    }
}
