// Rummy's discard pile as the seat's events tell it. A player may take only its top card, and
// only into a meld or a lay-off that same turn (docs/rules/rummy.md §3.1), but every card in it went
// there face up, in sight of every seat: which of a run's cards are gone (two decks: both 7♥?) is
// what a player plans by. The view has the top card and the count alone (RummyView), so the page
// keeps the rest from the events it is sent, which hide nothing of the pile from any seat.
import type { GameEvent } from "@croupier/client/web";

export class DiscardPile {
  /** Bottom first: the round's upcard, then each discard. */
  private cards: string[] = [];

  /** The pile after `event` (events come once each, in order: followGame). */
  add(event: GameEvent): void {
    const body = event.body?.body;
    if (body?.case !== "rummy") return;
    const e = body.value.event;
    switch (e.case) {
      case "roundDealt":
        this.cards = e.value.upcard ? [e.value.upcard.code] : [];
        break;
      case "cardDiscarded":
        if (e.value.card) this.cards.push(e.value.card.code);
        break;
      case "discardTaken":
        this.cards.pop();
        break;
      case "stockReshuffled":
        // Every discard but the top became the new stock (§3.1, "Running out of stock").
        this.cards = this.cards.slice(-1);
        break;
      default:
        break;
    }
  }

  /** The cards under the top one, newest first, when the pile as told is the view's (`top`, its
   * top card's code, and `count` cards): else undefined, and the page shows the view's alone
   * rather than a pile it cannot vouch for (events it was not sent: a newer server's). */
  under(top: string | undefined, count: number): string[] | undefined {
    if (this.cards.length !== count || this.cards.at(-1) !== top) return undefined;
    return this.cards.slice(0, -1).reverse();
  }
}
