// SPDX-License-Identifier: MIT
// Eligibility and lockups behind a managed token's access-registry hook (docs/platform/rwa.md "Holders,
// eligibility, lockups and the cap table"). One registry per token, its admin the token's admin Safe: only
// the Safe's transactions change it. A holder's eligibility is set globally (every token consulting this
// registry) or for one token (the token's entry, when set, replaces the global one); a lockup is per token
// and holder, until a timestamp. A token calls `checkTransfer` before every movement: the receiver of a
// transfer or mint must be verified and not expired; the sender of a transfer or burn must not be locked
// (a recovery, whose operator holds the token's RECOVERY_ROLE, passes a lockup).
pragma solidity 0.8.37;

import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {IAccessRegistry} from "./IAccessRegistry.sol";

contract AccessRegistry is IAccessRegistry {
    bytes32 private constant RECOVERY_ROLE = keccak256("RECOVERY_ROLE");

    /// A holder's standing: verified, its jurisdiction (ISO 3166-1 numeric), investor category (0 to 255,
    /// the issuer's own codes) and the time it expires (unix seconds; 0: never).
    struct Eligibility {
        bool verified;
        uint16 jurisdiction;
        uint8 category;
        uint64 expiresAt;
    }

    address public immutable admin;
    mapping(address holder => Eligibility) private _global;
    mapping(address token => mapping(address holder => Eligibility)) private _perToken;
    mapping(address token => mapping(address holder => bool)) private _hasTokenEntry;
    mapping(address token => mapping(address holder => uint64)) private _lockedUntil;

    event EligibilitySet(address indexed token, address indexed holder, bool verified, uint16 jurisdiction, uint8 category, uint64 expiresAt);
    event TokenEligibilityCleared(address indexed token, address indexed holder);
    event LockupSet(address indexed token, address indexed holder, uint64 until);

    error NotAdmin(address caller);
    error InvalidAddress(address account);
    error HolderNotEligible(address token, address holder);
    error EligibilityExpired(address token, address holder, uint64 expiresAt);
    error HolderLocked(address token, address holder, uint64 until);

    constructor(address admin_) {
        if (admin_ == address(0)) revert InvalidAddress(admin_);
        admin = admin_;
    }

    modifier onlyAdmin() {
        if (msg.sender != admin) revert NotAdmin(msg.sender);
        _;
    }

    /// Sets each holder's global eligibility (`token` in the event: zero).
    function setEligibility(address[] calldata holders, Eligibility calldata e) external onlyAdmin {
        for (uint256 i; i < holders.length; ++i) {
            if (holders[i] == address(0)) revert InvalidAddress(holders[i]);
            _global[holders[i]] = e;
            emit EligibilitySet(address(0), holders[i], e.verified, e.jurisdiction, e.category, e.expiresAt);
        }
    }

    /// Sets each holder's eligibility for `token`, replacing the global one there.
    function setTokenEligibility(address token, address[] calldata holders, Eligibility calldata e) external onlyAdmin {
        if (token == address(0)) revert InvalidAddress(token);
        for (uint256 i; i < holders.length; ++i) {
            if (holders[i] == address(0)) revert InvalidAddress(holders[i]);
            _perToken[token][holders[i]] = e;
            _hasTokenEntry[token][holders[i]] = true;
            emit EligibilitySet(token, holders[i], e.verified, e.jurisdiction, e.category, e.expiresAt);
        }
    }

    /// Drops each holder's entry for `token`: the global eligibility applies again.
    function clearTokenEligibility(address token, address[] calldata holders) external onlyAdmin {
        for (uint256 i; i < holders.length; ++i) {
            delete _perToken[token][holders[i]];
            delete _hasTokenEntry[token][holders[i]];
            emit TokenEligibilityCleared(token, holders[i]);
        }
    }

    /// Locks what each holder has of `token` until `until` (unix seconds; 0 lifts the lockup).
    function setLockup(address token, address[] calldata holders, uint64 until) external onlyAdmin {
        if (token == address(0)) revert InvalidAddress(token);
        for (uint256 i; i < holders.length; ++i) {
            if (holders[i] == address(0)) revert InvalidAddress(holders[i]);
            _lockedUntil[token][holders[i]] = until;
            emit LockupSet(token, holders[i], until);
        }
    }

    /// The holder's global eligibility.
    function globalEligibility(address holder) external view returns (Eligibility memory) {
        return _global[holder];
    }

    /// The holder's entry for `token`, and whether it has one.
    function tokenEligibility(address token, address holder) external view returns (Eligibility memory e, bool set) {
        return (_perToken[token][holder], _hasTokenEntry[token][holder]);
    }

    /// What applies to the holder on `token`: its token entry when set, else its global one.
    function effectiveEligibility(address token, address holder) public view returns (Eligibility memory) {
        return _hasTokenEntry[token][holder] ? _perToken[token][holder] : _global[holder];
    }

    /// Until when the holder's `token` is locked (0: not locked).
    function lockedUntil(address token, address holder) external view returns (uint64) {
        return _lockedUntil[token][holder];
    }

    /// Whether `holder` may receive `token` now.
    function isEligible(address token, address holder) public view returns (bool) {
        Eligibility memory e = effectiveEligibility(token, holder);
        return e.verified && (e.expiresAt == 0 || e.expiresAt > block.timestamp);
    }

    /// IAccessRegistry: the caller is the token.
    function checkTransfer(address operator, address from, address to, uint256, uint256) external view returns (bytes4) {
        address token = msg.sender;
        if (to != address(0)) {
            Eligibility memory e = effectiveEligibility(token, to);
            if (!e.verified) revert HolderNotEligible(token, to);
            if (e.expiresAt != 0 && e.expiresAt <= block.timestamp) revert EligibilityExpired(token, to, e.expiresAt);
        }
        if (from != address(0)) {
            uint64 until = _lockedUntil[token][from];
            if (until > block.timestamp && !_isRecovery(token, operator)) revert HolderLocked(token, from, until);
        }
        return IAccessRegistry.checkTransfer.selector;
    }

    function _isRecovery(address token, address operator) private view returns (bool) {
        try IAccessControl(token).hasRole(RECOVERY_ROLE, operator) returns (bool yes) {
            return yes;
        } catch {
            return false;
        }
    }
}
