"""The record of one finished game, shared by the executor (which produces it) and the store."""

from __future__ import annotations

from dataclasses import dataclass

DRAW, P1_WINS, P2_WINS = 0, 1, 2  # the env's ``infos["winner"]`` codes


@dataclass(frozen=True)
class GameResult:
    """One game. ``p1``/``p2`` are the participants that flew side 1 and side 2 (one aircraft each, or a
    team of ``team_size``); they and ``forfeit_by`` identify participants (positions in the executor, database
    ids in the store). A forfeit is a loss for ``forfeit_by``; its length is the steps played before the
    participant misbehaved (0 for games it never started) and its returns are NaN."""

    p1: int
    p2: int
    game_index: int  # number of this game within the ordered pairing (p1, p2)
    winner: int  # DRAW, P1_WINS or P2_WINS
    length: int  # decision steps
    return_p1: float
    return_p2: float
    missiles_p1: int = 0
    missiles_p2: int = 0
    batch: int = -1  # batch number (the store's batch id)
    slot: int = -1  # env index inside the batch
    seed: int = 0  # the game's start seed (TensorEnv.reset(game_seeds=...)); the batch's seed without per-game seeds
    forfeit_by: int | None = None
    forfeit_reason: str | None = None
    team_size: int = 1  # aircraft a side
    kills_p1: float | None = None  # enemy aircraft side 1 destroyed, shared kills split (None: schema-1 stores)
    kills_p2: float | None = None

    @property
    def forfeit(self) -> bool:
        return self.forfeit_by is not None

    @property
    def pair(self) -> tuple[int, int, int]:
        """``(lower id, higher id, game_index)``: shared by game g of (a, b) and game g of (b, a) and by no
        other game. The two start from the same seed with the sides swapped (``batching.GameSeeds``), so
        they are one side-swapped pair, and their outcomes are correlated through that start."""
        return min(self.p1, self.p2), max(self.p1, self.p2), self.game_index

    def score(self, side: int) -> float:
        """Points of the participant that flew ``side`` (1 or 2): a win 1, a draw ½, a loss 0."""
        if self.winner == DRAW:
            return 0.5
        return 1.0 if self.winner == side else 0.0

    def sides(self) -> tuple[tuple[int, int, float, float, int, float | None], ...]:
        """``(side, participant, score, return, missiles, kills)`` of each side: the store's ``sides`` rows."""
        return ((1, self.p1, self.score(1), self.return_p1, self.missiles_p1, self.kills_p1),
                (2, self.p2, self.score(2), self.return_p2, self.missiles_p2, self.kills_p2))
