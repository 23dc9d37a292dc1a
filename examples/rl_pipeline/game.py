"""A toy two-player game for the actors: tic-tac-toe on a 3x3 board, positions 0..8."""

from __future__ import annotations

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


class Board:
    __slots__ = ("cells", "to_move")

    def __init__(self, cells: list[int] | None = None, to_move: int = 1) -> None:
        self.cells = cells if cells is not None else [0] * 9
        self.to_move = to_move

    def copy(self) -> "Board":
        return Board(self.cells[:], self.to_move)

    def legal_moves(self) -> list[int]:
        return [i for i, c in enumerate(self.cells) if c == 0]

    def play(self, move: int) -> None:
        self.cells[move] = self.to_move
        self.to_move = -self.to_move

    def winner(self) -> int | None:
        """1 or -1 for a win, 0 for a draw, None while the game goes on."""
        cells = self.cells
        for a, b, c in LINES:
            if cells[a] != 0 and cells[a] == cells[b] == cells[c]:
                return cells[a]
        if 0 not in cells:
            return 0
        return None

    def features(self) -> list[float]:
        """The board from the side to move: 1 own stone, -1 the opponent's."""
        return [float(c * self.to_move) for c in self.cells]
