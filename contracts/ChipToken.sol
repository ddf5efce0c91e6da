// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/// @title The chip token: 1 chip = 10^6 base units (6 decimals), ERC-2612 permit so a player funds a
/// table deposit with one signature and no approve transaction of their own.
/// @notice The owner may mint: local and test funding. A production deployment mints once and
/// renounces ownership, or points the bank at an existing 6-decimal permit token instead.
contract ChipToken is ERC20, ERC20Permit, Ownable {
    constructor(address initialOwner) ERC20("Poker Chip", "CHIP") ERC20Permit("Poker Chip") Ownable(initialOwner) {}

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    function mint(address to, uint256 amount) external onlyOwner {
        _mint(to, amount);
    }
}
