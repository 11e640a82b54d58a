-- A sent message's row takes four updates within seconds of its insert (claimed, sent,
-- delivered, read), and a receipt statement's snapshot can keep the earlier versions from being
-- pruned meanwhile. With 60% of each page free (0046) one update in ten still found no room and
-- wrote an entry into each of the table's five indexes and a version on another page; with 70%
-- free every one stayed on its page (HOT) in bench/messaging's 100,000-message job, which wrote
-- 9% less WAL and ended no larger (messages with its indexes 165 MB against 168 MB). A row
-- inserted and seldom updated (an incoming message) takes more room: a page holds a quarter fewer
-- of them than at 40%.
ALTER TABLE "messages" SET (fillfactor = 30);
